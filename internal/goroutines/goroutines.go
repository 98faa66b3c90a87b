// Package goroutines is the leak check of the tests that stop jobs and
// children (run/job, run/runner): after the work is over, the
// goroutine count must come back to what it was before.
package goroutines

import (
	"runtime"
	"testing"
	"time"
)

// Settle waits until the goroutine count is back to at most want:
// goroutines that are ending may need a moment to be gone. It fails with
// every stack if they are still there after a generous deadline (the
// deadline bounds a failure, it is not what passes).
func Settle(t testing.TB, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > want {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, want at most %d:\n%s", runtime.NumGoroutine(), want, buf[:runtime.Stack(buf, true)])
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
}
