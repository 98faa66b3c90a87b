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

// TestProbeHeapPlanted: the probe's own heap, the live heap before the
// trainer is built, moves with a package-level allocation of a probe-side package,
// and so does the part probe.heap.
func TestProbeHeapPlanted(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc")
	}
	if plantedProbeInit == nil { // run again (-count): plant it from here
		plantedProbeInit = touched(plantedProbeBytes)
	}
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
	t.Logf("probe heap with the plant %d B, part %d B resident; without %d B, part %d B",
		with.Bytes, withPart.Bytes, without.Bytes, withoutPart.Bytes)
	const lo, hi = plantedProbeBytes * 9 / 10, plantedProbeBytes * 11 / 10
	if d := with.Bytes - without.Bytes; d < lo || d > hi {
		t.Errorf("the probe's heap fell by %d B when the %d B plant was freed, want within ±10 %%", d, plantedProbeBytes)
	}
	if d := withPart.Bytes - withoutPart.Bytes; d < lo || d > hi {
		t.Errorf("probe.heap fell by %d B resident when the %d B plant was freed, want within ±10 %%", d, plantedProbeBytes)
	}
}

// TestProbeHeapStable: measured again with nothing changed, the probe's
// heap reads the same within 64 KiB (the heap profile alone, sampled at
// 512 KiB, moved by 1.6 MiB between identical runs).
func TestProbeHeapStable(t *testing.T) {
	var lo, hi int64
	for i := range 5 {
		b := MeasureProbeHeap("in the test").Bytes
		if i == 0 || b < lo {
			lo = b
		}
		if i == 0 || b > hi {
			hi = b
		}
	}
	if hi-lo > 64<<10 {
		t.Errorf("the probe's heap read %d to %d B over five measurements of the same heap, want within 64 KiB", lo, hi)
	}
}
