package outside

import (
	"cmp"
	"context"
	"io"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"memprobe/internal/table"
	"memprobe/outside/sites"
	"memprobe/schema"
)

// SitesReader is the reader of an exec --sites watch's records while the
// program writes them (the live view's sites in use); nil without
// --sites.
func (s *Session) SitesReader() *sites.LiveReader {
	if s.sites == nil {
		return nil
	}
	return sites.NewLiveReader(s.sites.dir)
}

// LiveSample is the watch's latest figures; growth is left to Live.
func (s *Session) LiveSample() schema.LiveSample {
	ls := schema.LiveSample{Mode: s.mode, Command: s.command, PID: s.pid, Elapsed: time.Since(s.start), Children: -1}
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
				ls.Walk = append(ls.Walk, schema.LivePart{Name: p.Name, Bytes: p.Bytes})
			}
		}
		if u := w.Reconciliation.UnexplainedBytes; u > 0 {
			ls.Walk = append(ls.Walk, schema.LivePart{Name: "unexplained", Bytes: u})
		}
		slices.SortStableFunc(ls.Walk, func(a, b schema.LivePart) int { return cmp.Compare(b.Bytes, a.Bytes) })
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

// Live sends the live view's figures of s (with RSS's growth over the
// last few seconds) on frames every period until ctx ends (LiveDone) or
// keys gives a q, Q or Ctrl-C (LiveQuit), and closes frames when it
// returns. keys may be nil (no keyboard); a read error or end of keys
// only stops the reading. The drawing is the receiver's
// (report/process.LiveFrame).
func Live(ctx context.Context, s *Session, keys io.Reader, period time.Duration, frames chan<- schema.LiveSample) LiveEnd {
	defer close(frames)
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
		// Each sample taken is drawn, a q pressed meanwhile included: the
		// drawing side always receives, so this waits only for a frame.
		select {
		case frames <- ls:
		case <-ctx.Done():
			return LiveDone
		}
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

// iec formats bytes in the progress lines and warnings: "504 MiB",
// "1.9 MiB", "12 KiB" (table.FormatBytesShort, as the report).
func iec(b int64) string { return table.FormatBytesShort(b) }
