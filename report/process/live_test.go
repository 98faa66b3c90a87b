package process

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"memprobe/internal/golden"
	"memprobe/schema"
)

// liveSample is a fixed sample: a program growing, walked once.
func liveSample() schema.LiveSample {
	return schema.LiveSample{
		Mode: "exec", Command: []string{"./app", "--train"}, PID: 4242, Elapsed: 12300 * time.Millisecond,
		RSS: 300 << 20, Anon: 280 << 20, File: 20 << 20, Shmem: 0, VSZ: 2 << 30, Swap: 0, PeakRSS: 300 << 20, Threads: 4,
		GrowthBytesPerSec: 25 << 20,
		Walk:              []schema.LivePart{{Name: "unexplained", Bytes: 250 << 20}, {Name: "c.malloc.brk", Bytes: 30 << 20}, {Name: "file.mapped", Bytes: 20 << 20}},
		WalkMs:            11800, Children: 2, TreeRSS: 400 << 20,
	}
}

// TestLiveFrame: the live view's frame is a function of its sample
// alone (golden), every line within the width, the extra section (the
// hook --sites fills) under the figures; the growth rate, planted,
// moves the rate's words.
func TestLiveFrame(t *testing.T) {
	s := liveSample()
	sites := "top sites in use\n  1. alloc_batch (train.c:42)  120 MiB\n"
	var b bytes.Buffer
	for _, c := range []struct {
		name  string
		width int
		extra string
	}{{"80", 80, ""}, {"80 with a section", 80, sites}, {"40", 40, ""}} {
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
		if f := LiveFrame(s, 80, ""); !strings.Contains(f, c.want) {
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

// TestLiveFrameSites: the --sites section of the live view (golden), at
// two widths, sampled and at rate 1, with stacks not named yet, records
// not read yet and a file the reader could not read; before any record and once the
// program's images ended it says so. Every line fits the width.
func TestLiveFrameSites(t *testing.T) {
	s := liveSample()
	top := schema.LiveSites{Rate: 512 << 10, Bytes: 96 << 20, Objects: 1300, Sites: 3, Processes: 1, Unnamed: 2, UnnamedBytes: 1 << 20, BehindBytes: 40 << 20,
		Top: []schema.LiveSite{
			{Function: "alloc_batch", File: "/src/train/train.c", Line: 42, Bytes: 64 << 20, Objects: 64},
			{Function: "Trainer::allocate_activations(Config const&, unsigned long)", File: "/src/train/trainer.cc", Line: 650, Bytes: 30 << 20, Objects: 1234},
			{Function: "load_tokens", Bytes: 1 << 20, Objects: 2},
		}}
	exact := schema.LiveSites{Rate: 1, Bytes: 800000, Objects: 8, Sites: 1, Processes: 1, Top: []schema.LiveSite{{Function: "first_site", File: "testdata/live.c", Line: 22, Bytes: 800000, Objects: 8}}}
	// section is the sites' lines at a width.
	section := func(t schema.LiveSites, err error) func(width int) string {
		return func(width int) string {
			var b strings.Builder
			LiveSites(&b, width, t, err)
			return b.String()
		}
	}
	var b bytes.Buffer
	for _, c := range []struct {
		name  string
		width int
		extra func(int) string
	}{
		{"80 sampled", 80, section(top, nil)},
		{"40 sampled", 40, section(top, nil)},
		{"80 rate 1, a file unreadable", 80, section(exact, errors.New("reading /tmp/r/sites.7.0.bin at byte 421: record type 0x5a at a place where a record starts"))},
		{"80 no records yet", 80, section(schema.LiveSites{}, nil)},
		{"80 ended", 80, section(schema.LiveSites{Rate: 1}, nil)},
	} {
		f := LiveFrame(s, c.width, c.extra(c.width))
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
		if f := LiveFrame(s, 80, section(top, nil)(80)); !strings.Contains(f, c.want) {
			t.Errorf("%d bytes in use: the frame lacks %q:\n%s", c.bytes, c.want, f)
		}
	}
}
