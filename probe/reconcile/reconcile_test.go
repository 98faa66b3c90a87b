package reconcile

import (
	"bytes"
	"encoding/json"
	"memprobe/internal/golden"
	"runtime"
	"testing"

	"memprobe/probe/ledger"
	"memprobe/probe/procfs"
	"memprobe/probe/rtstats"
)

const (
	KiB = 1 << 10
	MiB = 1 << 20
)

// pureGo is a non-cgo process whose Go classes fit in RssAnon.
func pureGo() Input {
	return Input{
		Status: procfs.Status{
			VmRSSBytes: 100 * MiB, RssAnonBytes: 90 * MiB, RssFileBytes: 9 * MiB, RssShmemBytes: 1 * MiB,
			VmSizeBytes: 1200 * MiB, Threads: 10,
		},
		Runtime: rtstats.Snapshot{
			RuntimeThreads: 8,
			Memory: rtstats.MemoryClasses{
				HeapObjectsBytes: 50 * MiB, HeapUnusedBytes: 2 * MiB, HeapFreeBytes: 6 * MiB,
				HeapReleasedBytes: 20 * MiB, HeapStacksBytes: 1 * MiB,
				MetadataMSpanInuseBytes: 1 * MiB, MetadataOtherBytes: 3 * MiB, OtherBytes: 1 * MiB,
				TotalBytes: 84 * MiB,
			},
		},
		LedgerTotalBytes: 44 * MiB,
		Ledger: []ledger.Entry{
			{Component: ledger.DeviceBuffers, CurrentBytes: 4 * MiB},
			{Component: ledger.Grads, CurrentBytes: 20 * MiB},
			{Component: ledger.Params, CurrentBytes: 20 * MiB},
		},
		OutsideGoComponents: []string{ledger.DeviceBuffers},
	}
}

// cgoOvermapped is a cgo process whose Go classes exceed RssAnon, whose
// ledger exceeds heap/objects, and whose smaps_rollup disagrees with status.
func cgoOvermapped() Input {
	return Input{
		Status: procfs.Status{
			VmRSSBytes: 40 * MiB, RssAnonBytes: 30 * MiB, RssFileBytes: 10 * MiB,
			VmSizeBytes: 2000 * MiB, VmSwapBytes: 1 * MiB, Threads: 12,
		},
		Smaps: &procfs.SmapsRollup{RssBytes: 45 * MiB, PssBytes: 35 * MiB, AnonymousBytes: 30 * MiB},
		Runtime: rtstats.Snapshot{
			RuntimeThreads: 6,
			Memory: rtstats.MemoryClasses{
				HeapObjectsBytes: 20 * MiB, HeapUnusedBytes: 1 * MiB, HeapFreeBytes: 5 * MiB,
				HeapReleasedBytes: 10 * MiB, HeapStacksBytes: 1 * MiB, OSStacksBytes: 1 * MiB,
				MetadataOtherBytes: 4 * MiB, OtherBytes: 1 * MiB,
				TotalBytes: 43 * MiB,
			},
		},
		Ledger: []ledger.Entry{{Component: ledger.Params, CurrentBytes: 25 * MiB}},
		Cgo:    true,
	}
}

func partMap(ps []Part) map[string]int64 {
	m := map[string]int64{}
	for _, p := range ps {
		m[p.Name] = p.Bytes
	}
	return m
}

func checkParts(t *testing.T, what string, got []Part, want map[string]int64) {
	t.Helper()
	g := partMap(got)
	if len(g) != len(want) {
		t.Errorf("%s: %d parts, want %d: %v", what, len(g), len(want), g)
	}
	for name, b := range want {
		if g[name] != b {
			t.Errorf("%s: %s = %d, want %d", what, name, g[name], b)
		}
	}
}

func checkSums(t *testing.T, r Reconciliation) {
	t.Helper()
	var sum, vsum int64
	for _, p := range r.Parts {
		sum += p.Bytes
	}
	for _, p := range r.Virtual {
		vsum += p.Bytes
	}
	if sum+r.UnexplainedBytes != r.RSSBytes {
		t.Errorf("parts %d + unexplained %d != RSS %d", sum, r.UnexplainedBytes, r.RSSBytes)
	}
	if vsum != r.VSZBytes {
		t.Errorf("virtual parts %d != VSZ %d", vsum, r.VSZBytes)
	}
}

func TestComputePureGo(t *testing.T) {
	r := Compute(pureGo())
	checkSums(t, r)
	checkParts(t, "resident", r.Parts, map[string]int64{
		"go.heap.objects.ledger":   40 * MiB, // params + grads
		"go.heap.objects.other":    10 * MiB, // 50 − 40
		"go.heap.free":             8 * MiB,  // free 6 + unused 2
		"go.stacks.goroutines":     1 * MiB,
		"go.runtime.metadata":      5 * MiB, // mspan 1 + other metadata 3 + other 1
		"go.stacks.os":             0,
		"outside_go.thread_stacks": 2 * 16 * KiB, // 10 threads − 8 Go-owned
		"outside_go.ledger":        4 * MiB,      // device.buffers
		"outside_go.other":         22*MiB - 32*KiB,
		"file.mapped":              9 * MiB,
		"shmem":                    1 * MiB,
	})
	if r.UnexplainedBytes != 0 || len(r.Warnings) != 0 {
		t.Errorf("unexplained %d, warnings %q; want 0, none", r.UnexplainedBytes, r.Warnings)
	}
	checkParts(t, "virtual", r.Virtual, map[string]int64{
		"resident":               100 * MiB,
		"go.heap.released":       20 * MiB,
		"go.mapped.not_resident": 0,
		"thread_stacks.reserved": 2*8*MiB - 32*KiB,
		"swap":                   0,
		"other.address_space":    1064*MiB + 32*KiB, // 1200 − 100 − 20 − 16 MiB + 32 KiB
	})
	if r.ThreadStackReservedBytes != 16*MiB || r.PthreadStacks != 2 {
		t.Errorf("reserved %d for %d stacks, want 16 MiB for 2", r.ThreadStackReservedBytes, r.PthreadStacks)
	}
}

func TestComputeCgoOvermapped(t *testing.T) {
	r := Compute(cgoOvermapped())
	checkSums(t, r)
	checkParts(t, "resident", r.Parts, map[string]int64{
		"go.heap.objects.ledger":   20 * MiB, // ledger 25 capped at heap/objects
		"go.heap.objects.other":    0,
		"go.heap.free":             6 * MiB,
		"go.stacks.goroutines":     1 * MiB,
		"go.runtime.metadata":      5 * MiB,
		"go.stacks.os":             1 * MiB,
		"outside_go.thread_stacks": 12 * 16 * KiB, // cgo: every thread
		"outside_go.ledger":        0,
		"outside_go.other":         0, // 30 − 33 − 192 KiB, clamped
		"file.mapped":              10 * MiB,
		"shmem":                    0,
	})
	if want := int64(-(3*MiB + 192*KiB)); r.UnexplainedBytes != want {
		t.Errorf("unexplained %d, want %d", r.UnexplainedBytes, want)
	}
	if len(r.Warnings) != 2 { // ledger capped; smaps Rss differs by 5 MiB
		t.Errorf("warnings %q, want 2", r.Warnings)
	}
	checkParts(t, "virtual", r.Virtual, map[string]int64{
		"resident":               40 * MiB,
		"go.heap.released":       10 * MiB,
		"go.mapped.not_resident": 3 * MiB,
		"thread_stacks.reserved": 12*8*MiB - 192*KiB,
		"swap":                   1 * MiB,
		"other.address_space":    1850*MiB + 192*KiB,
	})
	if r.PSSBytes != 35*MiB {
		t.Errorf("PSS %d", r.PSSBytes)
	}
}

func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Input
	}{
		{"purego", pureGo()},
		{"cgo_overmapped", cgoOvermapped()},
	} {
		r := Compute(tc.in)
		var table bytes.Buffer
		if err := Render(&table, r); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, "table_"+tc.name+".golden", table.Bytes())
		js, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		golden.Check(t, "json_"+tc.name+".golden", append(js, '\n'))
	}
}

var sink [][]float32

func TestLiveSumsToRSS(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc")
	}
	l := ledger.New()
	params := l.Account(ledger.Params)
	for range 4 {
		// 4 MiB each, written so that it is resident: a fresh large
		// allocation is mapped zero pages that no one has touched.
		b := params.Float32s(1 << 20)
		for i := range b {
			b[i] = 1
		}
		sink = append(sink, b)
	}
	defer func() { sink = nil }()
	in, err := GatherSelf(rtstats.New(), l, true)
	if err != nil {
		t.Fatal(err)
	}
	r := Compute(in)
	checkSums(t, r)
	if r.RSSBytes <= 0 || r.VSZBytes < r.RSSBytes {
		t.Errorf("RSS %d, VSZ %d", r.RSSBytes, r.VSZBytes)
	}
	if got := partMap(r.Parts)["go.heap.objects.ledger"]; got != 16*MiB {
		t.Errorf("ledger part %d, want 16 MiB", got)
	}
	var table bytes.Buffer
	if err := Render(&table, r); err != nil {
		t.Fatal(err)
	}
	t.Logf("live reconciliation of the test process:\n%s", table.String())
}
