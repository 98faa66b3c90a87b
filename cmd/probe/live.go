package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/term"

	"memprobe/outside"
	"memprobe/outside/sites"
	"memprobe/report/process"
	"memprobe/schema"
)

// liveSitesTop is how many sites the live view lists (exec --sites).
const liveSitesTop = 5

// liveStdin is where --live reads its keys: the probe's standard input
// (a variable so that a test can put a pseudo-terminal there).
var liveStdin = os.Stdin

// liveTerminal says whether out is a terminal, where the live view's
// redrawn screen belongs (a variable so that a test can draw into a
// buffer).
var liveTerminal = func(out io.Writer) bool {
	f, ok := out.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// liveWanted is whether a watch with --live (live) draws its view on out:
// only on a terminal. Elsewhere (a file, a pipe, a CI log) the view's
// cursor moves and line erasures would be escape codes in the text, so
// it says so once on out and the watch goes on as without --live, with
// its progress lines; a frame a second as plain lines would bury them.
func liveWanted(live bool, out io.Writer) bool {
	if !live || liveTerminal(out) {
		return live
	}
	_, _ = io.WriteString(out, "probe: --live needs a terminal on stderr, and stderr is not one: going on without the live view\n")
	return false
}

// liveKeys says whether --live reads keys from in: only from a terminal,
// which the program then does not get (exec gives it /dev/null).
func liveKeys(in *os.File) bool { return in != nil && term.IsTerminal(int(in.Fd())) }

// liveView is the live view of a watch (--live) on out, refreshed every
// second: where stdin is a terminal it is put in raw mode, so that q (or
// Ctrl-C, a byte then) quits at once, and restored when the view stops,
// and as soon as the probe gets SIGINT, SIGTERM, SIGHUP or SIGQUIT (a
// probe that then dies of it leaves the terminal as it found it).
type liveView struct {
	once    sync.Once
	cancel  context.CancelFunc
	done    chan struct{}
	restore func()
	stopSig func()
}

// startLive starts the view of s. onQuit is called (once, from the
// view's goroutine) when the user quits: exec sends the program SIGINT,
// attach ends the watch. Each frame is drawn by report/process from the
// figures outside hands over, with exec --sites' top sites in use.
func startLive(s *outside.Session, in *os.File, out io.Writer, onQuit func()) *liveView {
	v := &liveView{done: make(chan struct{}), restore: func() {}, stopSig: func() {}}
	var keys io.Reader
	if liveKeys(in) {
		fd := int(in.Fd())
		if old, err := term.MakeRaw(fd); err == nil {
			var once sync.Once
			v.restore = func() { once.Do(func() { _ = term.Restore(fd, old) }) }
			keys = in
			sigs := make(chan os.Signal, 1)
			signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
			quitSig := make(chan struct{})
			go func() {
				select {
				case <-sigs:
					v.restore()
				case <-quitSig:
				}
			}()
			v.stopSig = func() { signal.Stop(sigs); close(quitSig) }
		}
	}
	width := func() int {
		if f, ok := out.(*os.File); ok {
			if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
				return w
			}
		}
		return 80
	}
	ctx, cancel := context.WithCancel(context.Background())
	v.cancel = cancel
	go func() {
		defer close(v.done)
		frames := make(chan schema.LiveSample)
		drawn := make(chan struct{})
		go func() { defer close(drawn); drawLive(out, s.SitesReader(), frames, width) }()
		end := outside.Live(ctx, s, keys, time.Second, frames)
		<-drawn // the last frame on the screen before the terminal goes back
		if end == outside.LiveQuit {
			// The terminal back at once: the program may take its time
			// to end.
			v.restore()
			onQuit()
		}
	}()
	return v
}

// drawLive draws each frame of the live view on out as it comes: the
// figures outside sends, exec --sites' top sites in use read from recs
// (nil without --sites), in report/process's words, at the terminal's
// width at the time.
func drawLive(out io.Writer, recs *sites.LiveReader, frames <-chan schema.LiveSample, width func() int) {
	for ls := range frames {
		w := width()
		var extra strings.Builder
		if recs != nil {
			err := recs.Poll()
			process.LiveSites(&extra, w, recs.Top(liveSitesTop), err)
		}
		_ = process.DrawFrame(out, process.LiveFrame(ls, w, extra.String()))
	}
}

// stop ends the view and gives the terminal back as it was; again, or
// on a nil view, it does nothing.
func (v *liveView) stop() {
	if v == nil {
		return
	}
	v.once.Do(func() {
		v.cancel()
		<-v.done
		v.stopSig()
		v.restore()
	})
}
