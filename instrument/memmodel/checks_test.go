package memmodel

import (
	"strings"
	"testing"

	"memprobe/ledger"
	"memprobe/schema"
)

// TestExecutorsFromConfig: the count is the configuration's, by the
// trainer's documented rule, worked out by hand for each case.
func TestExecutorsFromConfig(t *testing.T) {
	m := schema.Model{Batch: 4}
	for _, tc := range []struct {
		threads, asked, procs int
		ctx                   bool
		want                  int
	}{
		{threads: 8, procs: 2, want: 2},              // GOMAXPROCS binds
		{threads: 3, procs: 16, want: 3},             // threads bind
		{threads: 63, procs: 16, want: 4},            // B binds
		{threads: 1, procs: 0, want: 1},              // unknown GOMAXPROCS counts as 1
		{threads: 8, asked: 3, procs: 1, want: 3},    // asked for: GOMAXPROCS does not matter
		{threads: 8, asked: 9, procs: 16, want: 4},   // asked for, at most B
		{threads: 63, procs: 2, ctx: true, want: 63}, // one per worker context
	} {
		in := Input{Config: schema.Config{Model: m, Threads: tc.threads, Executors: tc.asked,
			Pathology: schema.Pathology{ContextWorkspaces: tc.ctx}}, GOMAXPROCS: tc.procs}
		if got, formula := Executors(in); got != tc.want {
			t.Errorf("%+v: %d executors (%s), want %d", tc, got, formula, tc.want)
		}
	}
}

// TestCheckExecutors: a made count other than the configuration's is a
// finding naming both; the same count is none.
func TestCheckExecutors(t *testing.T) {
	in := Input{Config: schema.Config{Model: schema.Model{Batch: 32}, Threads: 3}, GOMAXPROCS: 8}
	if r, ok := CheckExecutors(in, 3); ok {
		t.Errorf("3 executors made, 3 predicted: finding %+v", r)
	}
	r, ok := CheckExecutors(in, 4)
	if !ok || !r.Finding || r.Component != ExecutorsComponent || !strings.Contains(r.Note, "made 4 executors, the configuration gives 3") {
		t.Errorf("4 executors made, 3 predicted: %v %+v", ok, r)
	}
	if e, f, _ := schema.LedgerTotals([]Row{r}); e != 0 || f != 0 {
		t.Errorf("the executor row carries %d and %d bytes, want none", e, f)
	}
}

// TestGoHeapBytes: the worker stacks are never Go heap, the device's
// buffers only on the cpu device.
func TestGoHeapBytes(t *testing.T) {
	entries := []ledger.Entry{
		{Component: ledger.Params, CurrentBytes: 1000},
		{Component: ledger.WorkerStacks, CurrentBytes: 1 << 20},
		{Component: ledger.DeviceBuffers, CurrentBytes: 300},
		{Component: ledger.DecodeHost, CurrentBytes: 20},
	}
	for dev, want := range map[string]int64{"": 1320, "cpu": 1320, "cuda": 1020} {
		if got := GoHeapBytes(entries, dev); got != want {
			t.Errorf("device %q: %d B on the Go heap, want %d", dev, got, want)
		}
	}
}

// TestUnaccountedHeap: the threshold is max(8 MiB, 5 % of RSS); above it
// the row is a finding naming the bytes outside the ledger.
func TestUnaccountedHeap(t *testing.T) {
	const MiB = 1 << 20
	for _, tc := range []struct {
		heap, led, rss int64
		finding        bool
	}{
		{heap: 100 * MiB, led: 92 * MiB, rss: 100 * MiB, finding: false},    // 8 MiB: at the floor
		{heap: 100*MiB + 1, led: 92 * MiB, rss: 100 * MiB, finding: true},   // 1 B over it
		{heap: 1000 * MiB, led: 960 * MiB, rss: 1000 * MiB, finding: false}, // 40 MiB < 5 % of 1000 MiB
		{heap: 1000 * MiB, led: 940 * MiB, rss: 1000 * MiB, finding: true},  // 60 MiB > 50 MiB
		{heap: 65 * MiB, led: 1 * MiB, rss: 100 * MiB, finding: true},       // the plain 64 MiB make
		{heap: 10 * MiB, led: 12 * MiB, rss: 100 * MiB, finding: false},     // ledger above the heap: nothing missing
	} {
		r, ok := UnaccountedHeap(tc.heap, tc.led, tc.rss)
		if ok != tc.finding || r.Finding != tc.finding {
			t.Errorf("heap %d, ledger %d, RSS %d: finding %v, want %v", tc.heap, tc.led, tc.rss, ok, tc.finding)
		}
		if ok && (r.MeasuredBytes != tc.heap-tc.led || r.Component != UnaccountedComponent) {
			t.Errorf("heap %d, ledger %d: row %+v, want %d B under %s", tc.heap, tc.led, r, tc.heap-tc.led, UnaccountedComponent)
		}
	}
}

// TestDecodeHostByHand: the tiny preset's decode-head host buffers per
// executor (T = 64, C = 64, V = 788, two floats per output record).
func TestDecodeHostByHand(t *testing.T) {
	in := tinyInput()
	for _, tc := range []struct {
		mode, device string
		want         int64
	}{
		// tokens 2 × 64 = 128 B; cpu scratch 4 × 788 = 3,152 B
		{"per-token-copy", "cpu", 128 + 3152},
		{"per-token-view", "", 128 + 4*64 + 3152},                     // + targets
		{"per-token-prealloc", "cpu", 128 + 4*(64+128+64+788) + 3152}, // + targets, records, hidden, probs
		{"batch", "cpu", 128 + 4*(64+128) + 3152},                     // + targets, records
		{"batch", "cuda", 128 + 4*(64+128)},                           // no cpu scratch
	} {
		in.Config.Decode, in.Config.Device = tc.mode, tc.device
		var got *Component
		for _, c := range Expected(in) {
			if c.Name == ledger.DecodeHost {
				got = &c
			}
		}
		if got == nil || got.Bytes != 3*tc.want {
			t.Errorf("%s on %q: %s = %+v, want 3 executors × %d B", tc.mode, tc.device, ledger.DecodeHost, got, tc.want)
		}
	}
}
