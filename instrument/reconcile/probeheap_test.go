package reconcile

import (
	"os"
	"runtime"
	"testing"

	"memprobe/instrument/rtstats"
	"memprobe/ledger"
)

// plantedProbeInit is a package-level allocation of a probe-side package
// (this one), made by its initialisation as tablewriter's tables are: 8
// MiB, every page written so that it is resident.
var plantedProbeInit = touched(plantedProbeBytes)

const plantedProbeBytes = 8 << 20

func touched(n int) []byte {
	b := make([]byte, n)
	for i := 0; i < n; i += os.Getpagesize() {
		b[i] = 1
	}
	return b
}

// TestProbeHeapPlanted: the probe's own heap, measured from the heap
// profile, moves with a package-level allocation of a probe-side package,
// and so does the part probe.heap.
func TestProbeHeapPlanted(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc")
	}
	if plantedProbeInit == nil { // run again (-count): plant it from here
		plantedProbeInit = touched(plantedProbeBytes)
	}
	// Sample every allocation from here on: at the default rate one
	// sampled 64 KiB object (the anchors, made by the first walk) stands
	// for 545 KiB. The plant, 8 MiB, is sampled at any rate.
	defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
	runtime.MemProfileRate = 1
	rt := rtstats.New()
	measure := func() (ProbeHeap, Part) {
		h := MeasureProbeHeap("in the test")
		in, err := GatherSelf(rt, ledger.New(), true)
		if err != nil {
			t.Fatal(err)
		}
		in.ProbeHeap = &h
		r := Compute(in)
		checkSums(t, r)
		for _, p := range r.Parts {
			if p.Name == "probe.heap" {
				return h, p
			}
		}
		t.Fatalf("no part probe.heap in %+v", r.Parts)
		return h, Part{}
	}
	with, withPart := measure()
	plantedProbeInit = nil
	without, withoutPart := measure()
	t.Logf("probe heap with the plant %d B (%d sites), part %d B resident; without %d B, part %d B",
		with.Bytes, with.Records, withPart.Bytes, without.Bytes, withoutPart.Bytes)
	const lo, hi = plantedProbeBytes * 9 / 10, plantedProbeBytes * 11 / 10
	if d := with.Bytes - without.Bytes; d < lo || d > hi {
		t.Errorf("the probe's heap fell by %d B when the %d B plant was freed, want within ±10 %%", d, plantedProbeBytes)
	}
	if d := withPart.Bytes - withoutPart.Bytes; d < lo || d > hi {
		t.Errorf("probe.heap fell by %d B resident when the %d B plant was freed, want within ±10 %%", d, plantedProbeBytes)
	}
}

// TestProbeFrames: an allocation is the probe's by its stack's packages.
func TestProbeFrames(t *testing.T) {
	for _, tc := range []struct {
		funcs []string
		probe bool
	}{
		{[]string{"github.com/olekukonko/tablewriter/tw.init", "runtime.doInit1", "runtime.doInit", "runtime.main"}, true},
		{[]string{"regexp.MustCompile", "github.com/spf13/cobra.init.0", "runtime.doInit1"}, true},
		{[]string{"encoding/json.Marshal", "memprobe/instrument/sampler.(*Sampler).loop", "runtime.goexit"}, true},
		{[]string{"main.main", "runtime.main"}, true},
		// The trainer's, through the probe's ledger and job.
		{[]string{"memprobe/ledger.(*Account).Float32s", "memprobe/trainer.New", "memprobe/run/job.Run", "main.main"}, false},
		{[]string{"gonum.org/v1/gonum/blas/gonum.Implementation.Sgemm", "memprobe/trainer/gemm.Mul", "main.main"}, false},
		{[]string{"memprobe/trainer/phase.init", "runtime.doInit1"}, false},
		// Any Go program's: the runtime and the standard library.
		{[]string{"unicode.init", "runtime.doInit1", "runtime.main"}, false},
		{[]string{"slices.Grow[go.shape.[]memprobe/probe/x.T]", "runtime.main"}, false},
	} {
		if got := probeFrames(tc.funcs); got != tc.probe {
			t.Errorf("probeFrames(%q) = %v, want %v", tc.funcs, got, tc.probe)
		}
	}
}
