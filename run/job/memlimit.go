package job

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"memprobe/instrument/procfs"
	"memprobe/internal/table"
)

// WatchEvery is the period of the memory watchdog (Options.MemLimit): a
// job growing by 1 GB/s passes its limit by at most 20 MB before the
// watchdog sees it.
const WatchEvery = 20 * time.Millisecond

// HardMargin is how far VmRSS may pass Options.MemLimit, after the
// watchdog asked the training to stop, before it calls
// Options.MemHardStop: 5 % of the limit, at least 32 MiB.
func HardMargin(limit int64) int64 { return max(32<<20, limit/20) }

// goLimitFraction is the part of Options.MemLimit given to the Go
// runtime as its memory limit: the Go heap is collected harder as it
// nears it, leaving the rest to what the runtime does not count
// (OpenBLAS's buffers, thread stacks, the binary).
const goLimitFraction = 0.9

// MemoryError is Run's refusal of a configuration whose predicted peak
// RSS is above the memory limit or the memory available: nothing was
// built.
type MemoryError struct {
	Predicted int64  // the prediction's PeakRSSBytes
	Limit     int64  // what it was checked against
	Against   string // "--mem-limit" or "the memory available (MemAvailable)"
	Partial   bool   // the prediction includes the tape engine's estimate
}

func (e *MemoryError) Error() string {
	approx := ""
	if e.Partial {
		approx = "about "
	}
	return fmt.Sprintf("predicted peak RSS %s%s (instrument/memmodel plus margin) is above %s %s; not started: lower --threads, the preset or --data, or choose a later phase",
		approx, iec(e.Predicted), e.Against, iec(e.Limit))
}

// MemLimitError is the watchdog's cause for stopping a job: VmRSS passed
// Options.MemLimit.
type MemLimitError struct {
	RSS, Limit int64
	// Hard is true when RSS passed the limit by HardMargin before the
	// job could stop (MemHardStop's argument).
	Hard bool
}

func (e *MemLimitError) Error() string {
	if e.Hard {
		return fmt.Sprintf("RSS %s passed --mem-limit %s by more than %s before the job could stop; stopped without a result", iec(e.RSS), iec(e.Limit), iec(HardMargin(e.Limit)))
	}
	if iec(e.RSS) == iec(e.Limit) {
		return fmt.Sprintf("RSS %d B passed --mem-limit %s (%d B)", e.RSS, iec(e.Limit), e.Limit)
	}
	return fmt.Sprintf("RSS %s passed --mem-limit %s", iec(e.RSS), iec(e.Limit))
}

// StoppedError is Run's error for a job stopped before its last step: by
// its context (Ctrl-C or SIGTERM in the command: Cause is the context's
// cause) or by the memory watchdog (Cause is a *MemLimitError). With
// Steps > 0 Run also returns the result of the steps that ran, marked
// Interrupted.
type StoppedError struct {
	Cause     error
	Steps, Of int
}

func (e *StoppedError) Error() string {
	if e.Steps == 0 {
		return fmt.Sprintf("stopped before the first step finished: %v", e.Cause)
	}
	return fmt.Sprintf("stopped after %d of %d steps: %v", e.Steps, e.Of, e.Cause)
}
func (e *StoppedError) Unwrap() error { return e.Cause }

// memAvailable is MemAvailable; a variable so that tests can set the
// machine's memory.
var memAvailable = MemAvailable

// checkMemory refuses o when its predicted peak RSS is above o.MemLimit
// or the memory available. A prediction that cannot be made (a data file
// that is not there) is left to the loader, which says why.
func checkMemory(o *Options) error {
	p, err := Predict(configOf(o, ""), nil)
	if err != nil {
		return nil
	}
	if o.MemLimit > 0 && p.PeakRSSBytes > o.MemLimit {
		return &MemoryError{Predicted: p.PeakRSSBytes, Limit: o.MemLimit, Against: "--mem-limit", Partial: p.Partial}
	}
	if avail, err := memAvailable(); err == nil && p.PeakRSSBytes > avail {
		return &MemoryError{Predicted: p.PeakRSSBytes, Limit: avail, Against: "the memory available (MemAvailable)", Partial: p.Partial}
	}
	return nil
}

// watchMemory applies o.MemLimit: the Go memory limit, and a watchdog
// that cancels the returned context with a *MemLimitError once VmRSS
// passes the limit (and calls o.MemHardStop past HardMargin). stop ends
// the watchdog, waits for it, and restores the Go memory limit. Without
// a limit it returns ctx and a no-op.
func watchMemory(ctx context.Context, o *Options) (_ context.Context, stop func()) {
	if o.MemLimit <= 0 {
		return ctx, func() {}
	}
	old := debug.SetMemoryLimit(int64(goLimitFraction * float64(o.MemLimit)))
	ctx, cancel := context.WithCancelCause(ctx)
	statm, err := procfs.FS{}.OpenStatm(procfs.Self)
	if err != nil {
		fmt.Fprintf(os.Stderr, "warning: --mem-limit: no RSS watchdog: %v\n", err)
		return ctx, func() { cancel(nil); debug.SetMemoryLimit(old) }
	}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer statm.Close()
		tick := time.NewTicker(WatchEvery)
		defer tick.Stop()
		var sm procfs.Statm
		soft := false
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
			}
			if statm.Read(&sm) != nil {
				continue
			}
			rss := int64(sm.ResidentBytes)
			if rss <= o.MemLimit {
				continue
			}
			if !soft {
				soft = true
				cancel(&MemLimitError{RSS: rss, Limit: o.MemLimit})
			}
			if rss > o.MemLimit+HardMargin(o.MemLimit) && o.MemHardStop != nil {
				o.MemHardStop(&MemLimitError{RSS: rss, Limit: o.MemLimit, Hard: true})
				return
			}
		}
	}()
	return ctx, func() {
		close(quit)
		wg.Wait()
		cancel(nil)
		debug.SetMemoryLimit(old)
	}
}

// iec formats bytes in the memory messages, one decimal ("256.0 MiB"):
// table.FormatBytesFixed.
func iec(b int64) string { return table.FormatBytesFixed(b) }
