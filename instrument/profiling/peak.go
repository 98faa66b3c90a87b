package profiling

import (
	"fmt"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"time"
)

// peakMinInterval is PeakMinInterval; tests shorten it.
var peakMinInterval = PeakMinInterval

// peakWatcher writes a heap profile when the live heap crosses its
// high-water mark by PeakMarginFrac and PeakMinBytes. It wakes after every
// GC (the live heap, and the heap profile, change only when a GC ends), via
// a cleanup on a sentinel object that re-arms itself; the profile is then
// written on the watcher's own goroutine, after a forced GC that makes the
// profile current (one extra GC cycle per profile). It is rate limited: a crossing
// within PeakMinInterval of the last profile is profiled when the interval
// has passed, if the heap is still above the mark.
type peakWatcher struct {
	s     *Session
	base  string // heap path without extension
	ext   string
	max   int
	gc    chan struct{}
	done  chan struct{}
	exit  chan struct{}
	smp   []metrics.Sample
	mu    sync.Mutex // guards the fields below and the sampling
	hwm   int64      // live heap at the last profile (or at start)
	live  int64      // largest live heap seen
	n     int        // profiles written
	skip  int        // crossings not profiled because n == max
	last  time.Time
	timer *time.Timer
	quit  bool
}

func startPeakWatcher(s *Session, heapPath string, max int) *peakWatcher {
	ext := filepath.Ext(heapPath)
	w := &peakWatcher{
		s: s, base: strings.TrimSuffix(heapPath, ext), ext: ext, max: max,
		gc: make(chan struct{}, 1), done: make(chan struct{}), exit: make(chan struct{}),
		smp: []metrics.Sample{{Name: "/gc/heap/live:bytes"}},
	}
	w.hwm = w.read()
	w.live = w.hwm
	w.arm()
	go w.loop()
	return w
}

// sentinel is a heap object no one references; its cleanup runs after the
// GC that finds it dead. It holds a pointer so that it is not batched in
// the tiny allocator, whose blocks may never be freed.
type sentinel struct {
	_ *int
	_ [16]byte
}

func (w *peakWatcher) arm() {
	runtime.AddCleanup(new(sentinel), func(w *peakWatcher) {
		select {
		case <-w.done:
			return
		default:
		}
		select {
		case w.gc <- struct{}{}:
		default: // a wake-up is already pending
		}
		w.arm()
	}, w)
}

func (w *peakWatcher) read() int64 {
	metrics.Read(w.smp)
	return int64(w.smp[0].Value.Uint64())
}

func (w *peakWatcher) loop() {
	defer close(w.exit)
	for {
		select {
		case <-w.done:
			return
		case <-w.gc:
			w.check()
		}
	}
}

// check compares the live heap with the mark and writes a profile if it
// crossed it and the rate limit allows.
func (w *peakWatcher) check() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.quit {
		return
	}
	live := w.read()
	w.live = max(w.live, live)
	if !crossed(live, w.hwm) {
		return
	}
	if w.n >= w.max {
		w.skip++
		w.hwm = live // count each crossing once
		return
	}
	if wait := peakMinInterval - time.Since(w.last); !w.last.IsZero() && wait > 0 {
		if w.timer == nil {
			w.timer = time.AfterFunc(wait, func() {
				w.mu.Lock()
				w.timer = nil
				w.mu.Unlock()
				select {
				case w.gc <- struct{}{}:
				default:
				}
			})
		}
		return
	}
	w.n++
	path := fmt.Sprintf("%s-peak-%02d%s", w.base, w.n, w.ext)
	// The heap profile publishes a GC cycle's snapshot only when the next
	// cycle ends, so the profile now would show the heap before this
	// peak. A forced GC publishes the snapshot of its own mark
	// termination: what is live now.
	runtime.GC()
	live = max(live, w.read())
	w.live = max(w.live, live)
	// Staged: the file becomes path when the session stops, and is
	// removed if it is discarded (a failed job leaves no profile).
	tmp, err := stageProfile("heap", path)
	if err != nil {
		w.s.warnf("heap peak profile: %v", err)
		return
	}
	w.hwm, w.last = live, time.Now()
	w.s.stage(File{Kind: "heap-peak", Path: path, HeapLiveBytes: live, TMs: w.s.since()}, tmp)
}

// crossed reports whether live exceeds mark by the margin.
func crossed(live, mark int64) bool {
	return float64(live) > float64(mark)*(1+PeakMarginFrac) && live-mark >= PeakMinBytes
}

// stop ends the watcher and returns the largest live heap it saw and the
// crossings it skipped.
func (w *peakWatcher) stop() (maxLive int64, skipped int) {
	w.mu.Lock()
	w.quit = true
	if w.timer != nil {
		w.timer.Stop()
	}
	w.mu.Unlock()
	close(w.done)
	<-w.exit
	w.mu.Lock()
	defer w.mu.Unlock()
	return max(w.live, w.read()), w.skip
}

// seen reports whether the watcher has handled a live heap of at least b.
func (w *peakWatcher) seen(b int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.live >= b
}
