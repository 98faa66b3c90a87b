package outside

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"memprobe/internal/golden"
	"memprobe/outside/sites"
)

// liveSample is a fixed sample: a program growing, walked once.
func liveSample() LiveSample {
	return LiveSample{
		Mode: "exec", Command: "./app --train", PID: 4242, Elapsed: 12300 * time.Millisecond,
		RSS: 300 << 20, Anon: 280 << 20, File: 20 << 20, Shmem: 0, VSZ: 2 << 30, Swap: 0, PeakRSS: 300 << 20, Threads: 4,
		GrowthBytesPerSec: 25 << 20,
		Walk:              []LivePart{{"unexplained", 250 << 20}, {"c.malloc.brk", 30 << 20}, {"file.mapped", 20 << 20}},
		WalkMs:            11800, Children: 2, TreeRSS: 400 << 20,
	}
}

// TestLiveFrame: the live view's frame is a function of its sample
// alone (golden), every line within the width, the extra section (the
// hook --sites fills) under the figures; the growth rate, planted,
// moves the rate's words.
func TestLiveFrame(t *testing.T) {
	s := liveSample()
	sites := func(w io.Writer, width int) {
		fmt.Fprintf(w, "top sites in use\n  1. alloc_batch (train.c:42)  120 MiB\n")
	}
	var b bytes.Buffer
	for _, c := range []struct {
		name  string
		width int
		extra LiveSection
	}{{"80", 80, nil}, {"80 with a section", 80, sites}, {"40", 40, nil}} {
		f := LiveFrame(s, c.width, c.extra)
		for _, l := range strings.Split(strings.TrimSuffix(f, "\n"), "\n") {
			if n := utf8.RuneCountInString(l); n > c.width {
				t.Errorf("%s: a line of %d columns, over the width %d: %q", c.name, n, c.width, l)
			}
		}
		fmt.Fprintf(&b, "== width %s\n%s", c.name, f)
	}
	golden.Check(t, "live_frame.golden", b.Bytes())
	if f := LiveFrame(s, 80, sites); !strings.Contains(f, "alloc_batch") || strings.Index(f, "top sites") < strings.Index(f, "descendants") {
		t.Errorf("the extra section is not under the figures:\n%s", f)
	}
	for _, c := range []struct {
		bps  float64
		want string
	}{{25 << 20, "growing 25 MiB/s"}, {-(3 << 20), "shrinking 3 MiB/s"}, {1000, "steady"}} {
		s.GrowthBytesPerSec = c.bps
		if f := LiveFrame(s, 80, nil); !strings.Contains(f, c.want) {
			t.Errorf("growth %.0f B/s: the frame lacks %q:\n%s", c.bps, c.want, f)
		}
	}
}

// TestDrawFrame: a frame goes to the screen from the top left, lines
// ended by CR LF (raw mode) and cleared to their end.
func TestDrawFrame(t *testing.T) {
	var b bytes.Buffer
	if err := DrawFrame(&b, "a\nb\n"); err != nil {
		t.Fatal(err)
	}
	if want := "\x1b[Ha\x1b[K\r\nb\x1b[K\r\n\x1b[J"; b.String() != want {
		t.Errorf("drew %q, want %q", b.String(), want)
	}
}

// syncBuf is a buffer that Live writes to while the test reads it.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func width80() int { return 80 }

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
	go func() { end <- Live(context.Background(), h.s, &out, kr, 10*time.Millisecond, width80, nil) }()
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
	go func() { end <- Live(ctx, s, io.Discard, nil, 10*time.Millisecond, width80, nil) }()
	if _, err := s.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	cancel()
	if e := <-end; e != LiveDone {
		t.Errorf("program ended: Live ended with %v, want LiveDone", e)
	}
}

// TestLiveFrameSites: the --sites section of the live view (golden), at
// two widths, sampled and at rate 1, with stacks not named yet, records
// not read yet and a file the reader could not read; before any record and once the
// program's images ended it says so. Every line fits the width.
func TestLiveFrameSites(t *testing.T) {
	s := liveSample()
	top := sites.LiveTop{Rate: 512 << 10, Bytes: 96 << 20, Objects: 1300, Sites: 3, Processes: 1, Unnamed: 2, UnnamedBytes: 1 << 20, BehindBytes: 40 << 20,
		Top: []sites.LiveSite{
			{Function: "alloc_batch", File: "/src/train/train.c", Line: 42, Bytes: 64 << 20, Objects: 64},
			{Function: "Trainer::allocate_activations(Config const&, unsigned long)", File: "/src/train/trainer.cc", Line: 650, Bytes: 30 << 20, Objects: 1234},
			{Function: "load_tokens", Bytes: 1 << 20, Objects: 2},
		}}
	exact := sites.LiveTop{Rate: 1, Bytes: 800000, Objects: 8, Sites: 1, Processes: 1, Top: []sites.LiveSite{{Function: "first_site", File: "testdata/live.c", Line: 22, Bytes: 800000, Objects: 8}}}
	section := func(t sites.LiveTop, err error) LiveSection {
		return func(w io.Writer, width int) { renderLiveSites(w, width, t, err) }
	}
	var b bytes.Buffer
	for _, c := range []struct {
		name  string
		width int
		extra LiveSection
	}{
		{"80 sampled", 80, section(top, nil)},
		{"40 sampled", 40, section(top, nil)},
		{"80 rate 1, a file unreadable", 80, section(exact, errors.New("reading /tmp/r/sites.7.0.bin at byte 421: record type 0x5a at a place where a record starts"))},
		{"80 no records yet", 80, section(sites.LiveTop{}, nil)},
		{"80 ended", 80, section(sites.LiveTop{Rate: 1}, nil)},
	} {
		f := LiveFrame(s, c.width, c.extra)
		for _, l := range strings.Split(strings.TrimSuffix(f, "\n"), "\n") {
			if n := utf8.RuneCountInString(l); n > c.width {
				t.Errorf("%s: a line of %d columns, over the width %d: %q", c.name, n, c.width, l)
			}
		}
		f = f[strings.Index(f, "descendants"):]
		fmt.Fprintf(&b, "== width %s\n%s", c.name, f)
	}
	golden.Check(t, "live_frame_sites.golden", b.Bytes())
	for _, c := range []struct {
		bytes int64
		want  string
	}{{64 << 20, "64 MiB in 3 sites"}, {3 << 30, "3 GiB in 3 sites"}} {
		top.Bytes = c.bytes
		if f := LiveFrame(s, 80, section(top, nil)); !strings.Contains(f, c.want) {
			t.Errorf("%d bytes in use: the frame lacks %q:\n%s", c.bytes, c.want, f)
		}
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
	section := h.s.SitesSection()
	if section == nil {
		t.Fatal("no sites section with --sites")
	}
	h.waitLine(t, "ready")
	var out syncBuf
	ctx, cancel := context.WithCancel(context.Background())
	end := make(chan LiveEnd, 1)
	go func() { end <- Live(ctx, h.s, &out, nil, 10*time.Millisecond, width80, section) }()
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
	if noSites.SitesSection() != nil {
		t.Error("a sites section without --sites")
	}
}
