package outside

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// LiveSample is what one frame of the live view shows: the latest
// figures of a watch (Session.LiveSample).
type LiveSample struct {
	Mode    string
	Command string
	PID     int
	// Elapsed is the time watched so far.
	Elapsed time.Duration
	// RSS and its parts, VSZ and swap as last sampled, in bytes; PeakRSS
	// the largest RSS sampled so far.
	RSS, Anon, File, Shmem uint64
	VSZ, Swap, PeakRSS     uint64
	Threads                int
	// GrowthBytesPerSec is RSS's rate of change over the last few
	// seconds (Live's window); NaN-free, 0 before a second frame.
	GrowthBytesPerSec float64
	// Walk is the last full walk's parts, largest resident first, and
	// when it was taken (WalkMs since the watch began); none before the
	// first walk.
	Walk   []LivePart
	WalkMs float64
	// Children are the live descendants (--children) and TreeRSS their
	// RSS with the process's, at the last read; -1 when not watched.
	Children int
	TreeRSS  uint64
}

// LivePart is one part of a walk's breakdown of RSS.
type LivePart struct {
	Name  string
	Bytes int64
}

// LiveSection is an optional section of the live view under the
// figures, such as the top allocation sites in use (--sites): it writes
// its lines, each at most width columns, without a line break at the end
// of the last. nil: no section.
type LiveSection func(w io.Writer, width int)

// LiveFrame is one frame of the live view: a pure function of the sample,
// the terminal's width and the extra section, so that it is tested
// without a terminal. Lines are separated by "\n"; DrawFrame puts it on
// a screen.
func LiveFrame(s LiveSample, width int, extra LiveSection) string {
	width = max(width, 40)
	var b strings.Builder
	line := func(format string, args ...any) {
		l := fmt.Sprintf(format, args...)
		if r := []rune(l); len(r) > width {
			l = string(r[:width-1]) + "…"
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	head := fmt.Sprintf("probe %s: %s (pid %d), %.1f s", s.Mode, s.Command, s.PID, s.Elapsed.Seconds())
	const keys = "q: quit"
	if pad := width - len([]rune(head)) - len(keys); pad >= 2 {
		head += strings.Repeat(" ", pad) + keys
	} else {
		head += "  " + keys
	}
	line("%s", head)
	line("RSS %s (peak %s), %s", iec(int64(s.RSS)), iec(int64(s.PeakRSS)), rate(s.GrowthBytesPerSec))
	barW := max(width-24, 10)
	for _, p := range []struct {
		name string
		b    uint64
	}{{"anon", s.Anon}, {"file", s.File}, {"shmem", s.Shmem}} {
		line("  %-6s %10s %s", p.name, iec(int64(p.b)), bar(p.b, s.PeakRSS, barW))
	}
	line("VSZ %s, swap %s, %d threads", iec(int64(s.VSZ)), iec(int64(s.Swap)), s.Threads)
	if len(s.Walk) > 0 {
		line("at the last walk (%.1f s):", s.WalkMs/1000)
		for i, p := range s.Walk {
			if i == 5 {
				break
			}
			line("  %-18s %10s", p.Name, iec(p.Bytes))
		}
	} else {
		line("no walk of the address space yet")
	}
	if s.Children >= 0 {
		line("descendants: %d live, the tree's RSS %s", s.Children, iec(int64(s.TreeRSS)))
	}
	if extra != nil {
		var x strings.Builder
		extra(&x, width)
		if x.Len() > 0 {
			b.WriteByte('\n')
			for _, l := range strings.Split(strings.TrimRight(x.String(), "\n"), "\n") {
				line("%s", l)
			}
		}
	}
	return b.String()
}

// rate says how fast RSS moves: "growing 25.1 MiB/s", "steady".
func rate(bps float64) string {
	switch {
	case bps >= 64<<10:
		return fmt.Sprintf("growing %s/s", iec(int64(bps)))
	case bps <= -64<<10:
		return fmt.Sprintf("shrinking %s/s", iec(int64(-bps)))
	}
	return "steady"
}

// bar is a bar of width cells filled in the proportion v/of.
func bar(v, of uint64, width int) string {
	n := 0
	if of > 0 {
		n = min(int(float64(v)/float64(of)*float64(width)+0.5), width)
	}
	return strings.Repeat("█", n) + strings.Repeat("·", width-n)
}

// DrawFrame puts a frame on a terminal: from the top left, over what
// was there, each line ended by "\r\n" (a terminal in raw mode does not
// turn "\n" into a carriage return and a line feed) and cleared to its
// end, and the rest of the screen cleared.
func DrawFrame(w io.Writer, frame string) error {
	var b strings.Builder
	b.WriteString("\x1b[H")
	for _, l := range strings.Split(strings.TrimSuffix(frame, "\n"), "\n") {
		b.WriteString(l)
		b.WriteString("\x1b[K\r\n")
	}
	b.WriteString("\x1b[J")
	_, err := io.WriteString(w, b.String())
	return err
}

// LiveSample is the watch's latest figures; growth is left to Live.
func (s *Session) LiveSample() LiveSample {
	ls := LiveSample{Mode: s.mode, Command: QuoteCommand(s.command), PID: s.pid, Elapsed: time.Since(s.start), Children: -1}
	if s.smp != nil {
		r := s.smp.Peek()
		if r.Last != nil {
			p := r.Last
			ls.RSS, ls.Anon, ls.File, ls.Shmem = p.RSSBytes, p.RssAnonBytes, p.RssFileBytes, p.RssShmemBytes
			ls.VSZ, ls.Swap, ls.Threads = p.VSZBytes, p.SwapBytes, p.Threads
		}
		ls.PeakRSS = r.Peaks.RSSBytes
	}
	if w := s.sched.endWalk(); w != nil {
		ls.WalkMs = w.TMs
		for _, p := range w.Reconciliation.Parts {
			if p.Bytes > 0 {
				ls.Walk = append(ls.Walk, LivePart{p.Name, p.Bytes})
			}
		}
		if u := w.Reconciliation.UnexplainedBytes; u > 0 {
			ls.Walk = append(ls.Walk, LivePart{"unexplained", u})
		}
		slices.SortStableFunc(ls.Walk, func(a, b LivePart) int { return cmp.Compare(b.Bytes, a.Bytes) })
	}
	if s.kids != nil {
		ls.Children, ls.TreeRSS = s.kids.live()
	}
	return ls
}

// LiveEnd says why Live returned.
type LiveEnd int

const (
	// LiveDone: ctx ended (the program exited, the watch ended).
	LiveDone LiveEnd = iota
	// LiveQuit: the user pressed q (or Ctrl-C, which a terminal in raw
	// mode sends as a byte, 0x03, instead of a signal).
	LiveQuit
)

// liveWindow is the span over which the live view's growth rate is
// taken.
const liveWindow = 5 * time.Second

// Live draws the live view of s on out every period until ctx ends
// (LiveDone) or keys gives a q, Q or Ctrl-C (LiveQuit). keys may be nil
// (no keyboard); a read error or end of keys only stops the reading.
// width is the terminal's width, called for each frame (it may change).
// extra is drawn under the figures (LiveSection).
func Live(ctx context.Context, s *Session, out io.Writer, keys io.Reader, period time.Duration, width func() int, extra LiveSection) LiveEnd {
	quit := make(chan struct{})
	stop := make(chan struct{})
	if keys != nil {
		done := make(chan struct{})
		go func() { defer close(done); readKeys(keys, quit, stop) }()
		defer func() {
			close(stop)
			if _, ok := keys.(interface{ Fd() uintptr }); ok {
				// Gone before Live returns: a key pressed for what comes
				// next is not taken by this view.
				<-done
			}
		}()
	}
	type point struct {
		t   time.Time
		rss uint64
	}
	var hist []point
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		ls := s.LiveSample()
		now := time.Now()
		hist = append(hist, point{now, ls.RSS})
		for len(hist) > 2 && now.Sub(hist[1].t) >= liveWindow {
			hist = hist[1:]
		}
		ls.GrowthBytesPerSec = growthRate(hist[0].t, hist[0].rss, now, ls.RSS)
		DrawFrame(out, LiveFrame(ls, width(), extra))
		select {
		case <-ctx.Done():
			return LiveDone
		case <-quit:
			return LiveQuit
		case <-t.C:
		}
	}
}

// readKeys closes quit at a q, Q or Ctrl-C read from keys. A file (a
// terminal, a pipe) is polled, so that the reading stops with stop and
// leaves nothing behind to take the next program's keys; another reader
// is read until it ends.
func readKeys(keys io.Reader, quit, stop chan struct{}) {
	isQuit := func(b []byte) bool {
		return slices.ContainsFunc(b, func(c byte) bool { return c == 'q' || c == 'Q' || c == 3 })
	}
	var b [64]byte
	f, ok := keys.(interface{ Fd() uintptr })
	if !ok {
		for {
			n, err := keys.Read(b[:])
			if isQuit(b[:n]) {
				close(quit)
				return
			}
			if err != nil {
				return
			}
		}
	}
	fd := int(f.Fd())
	for {
		select {
		case <-stop:
			return
		default:
		}
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(pfd, 100)
		if err == unix.EINTR || n == 0 {
			continue
		}
		if err != nil || pfd[0].Revents&(unix.POLLIN|unix.POLLHUP|unix.POLLERR) == 0 {
			return
		}
		m, err := unix.Read(fd, b[:])
		if m > 0 && isQuit(b[:m]) {
			close(quit)
			return
		}
		if err != nil && err != unix.EINTR && err != unix.EAGAIN || m == 0 && err == nil {
			return // the end of it
		}
	}
}

// growthRate is the change from (t0, a) to (t1, b) in bytes a second; 0
// over no time.
func growthRate(t0 time.Time, a uint64, t1 time.Time, b uint64) float64 {
	d := t1.Sub(t0).Seconds()
	if d <= 0 {
		return 0
	}
	return (float64(b) - float64(a)) / d
}
