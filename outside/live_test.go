package outside

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"memprobe/outside/sites"
	"memprobe/report/process"
	"memprobe/schema"
)

// syncBuf is a buffer that Live writes to while the test reads it.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// drawTo is a channel of frames for Live, each drawn on out as probe
// exec --live does, at 80 columns, with the sites in use read from recs
// (nil: none).
func drawTo(out io.Writer, recs *sites.LiveReader) chan<- schema.LiveSample {
	frames := make(chan schema.LiveSample)
	go func() {
		for ls := range frames {
			var extra strings.Builder
			if recs != nil {
				err := recs.Poll()
				process.LiveSites(&extra, 80, recs.Top(5), err)
			}
			process.DrawFrame(out, process.LiveFrame(ls, 80, extra.String()))
		}
	}()
	return frames
}

// TestLiveQuit: the live view ends on q from the keyboard (a pipe
// stands in for the terminal) while the program runs on, and when the
// watch ends (the program exited).
func TestLiveQuit(t *testing.T) {
	h := execHeld(t, slowWalks, nil, cprog(t, "faults"), "2560", "0", "hold")
	h.waitLine(t, "ready")
	kr, kw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer kr.Close()
	var out syncBuf
	end := make(chan LiveEnd, 1)
	go func() { end <- Live(context.Background(), h.s, kr, 10*time.Millisecond, drawTo(&out, nil)) }()
	waitFor(t, "a frame with the program's RSS", func() bool { return strings.Contains(out.String(), "RSS 1") })
	kw.Write([]byte("xq"))
	if e := <-end; e != LiveQuit {
		t.Errorf("q: Live ended with %v, want LiveQuit", e)
	}
	kw.Close()
	h.release(t)

	s, err := Exec(ExecOptions{Options: slowWalks, Args: []string{cprog(t, "faults"), "0", "50"}, Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { end <- Live(ctx, s, nil, 10*time.Millisecond, drawTo(io.Discard, nil)) }()
	if _, err := s.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	cancel()
	if e := <-end; e != LiveDone {
		t.Errorf("program ended: Live ended with %v, want LiveDone", e)
	}
}

// TestLiveSites: the live view of an exec --sites run (rate 1) names the
// planted site with its bytes in use (12 blocks of 250000 bytes) while
// the program runs, held on its stdin, from the records it has written.
func TestLiveSites(t *testing.T) {
	sitesLib(t)
	o := slowWalks
	o.OutDir = t.TempDir()
	o.Sites = SitesOptions{Enabled: true, Rate: 1}
	h := execHeld(t, o, nil, cprog(t, "livesites"))
	section := h.s.SitesReader()
	if section == nil {
		t.Fatal("no sites section with --sites")
	}
	h.waitLine(t, "ready")
	var out syncBuf
	ctx, cancel := context.WithCancel(context.Background())
	end := make(chan LiveEnd, 1)
	go func() { end <- Live(ctx, h.s, nil, 10*time.Millisecond, drawTo(&out, section)) }()
	want := fmt.Sprintf("%s %9s  planted_site", iec(12*250000), "12")
	waitFor(t, "a frame naming planted_site", func() bool { return strings.Contains(out.String(), "planted_site") })
	cancel()
	<-end
	frames := out.String()
	last := frames[strings.LastIndex(frames, "\x1b[H"):]
	if !strings.Contains(last, want) || !strings.Contains(last, "every block, as of the last flush") {
		t.Errorf("the last frame lacks %q:\n%s", want, strings.ReplaceAll(last, "\x1b[K\r\n", "\n"))
	}
	r := h.release(t)
	if st := r.Process.Sites; st == nil || len(st.TopExit) == 0 || st.TopExit[0].Function != "planted_site" {
		t.Errorf("the report after the live view: sites %+v, want planted_site first at exit; warnings %q", st, r.Warnings)
	}
	var noSites Session
	if noSites.SitesReader() != nil {
		t.Error("a sites section without --sites")
	}
}
