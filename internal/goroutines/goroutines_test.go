package goroutines

import (
	"runtime"
	"testing"
	"time"
)

// TestSettle: goroutines still ending when Settle is called are waited for.
func TestSettle(t *testing.T) {
	before := runtime.NumGoroutine()
	for range 4 {
		go time.Sleep(20 * time.Millisecond)
	}
	Settle(t, before)
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after Settle, want at most %d", n, before)
	}
}
