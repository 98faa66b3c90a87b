package process

import (
	"fmt"
	"io"
	"strings"

	"memprobe/schema"
)

// LiveFrame is one frame of the live view: a pure function of the
// sample, the terminal's width and an extra section's lines drawn under
// the figures (exec --sites: LiveSites; "" for none), so that it is
// tested without a terminal. Lines are separated by "\n"; DrawFrame puts it on
// a screen.
func LiveFrame(s schema.LiveSample, width int, extra string) string {
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
	head := fmt.Sprintf("probe %s: %s (pid %d), %.1f s", s.Mode, QuoteCommand(s.Command), s.PID, s.Elapsed.Seconds())
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
	if extra != "" {
		b.WriteByte('\n')
		for _, l := range strings.Split(strings.TrimRight(extra, "\n"), "\n") {
			line("%s", l)
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
