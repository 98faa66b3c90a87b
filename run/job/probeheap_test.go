package job

import (
	"context"
	"io"
	"os"
	"runtime"
	"testing"

	"memprobe/instrument/reconcile"
)

// plantedProbeHeap is a package-level allocation of a probe-side package
// (this one), made by its initialisation as tablewriter's tables are: 4
// MiB, every page written (small enough that the ledger check's
// go.heap.unaccounted, 8 MiB, does not flag the other tests' jobs).
var plantedProbeHeap = func() []byte {
	b := make([]byte, plantedProbeHeapBytes)
	for i := 0; i < len(b); i += os.Getpagesize() {
		b[i] = 1
	}
	return b
}()

const plantedProbeHeapBytes = 4 << 20

// TestRunProbeHeap: the job's reconciliation names the probe's own heap
// (probe.heap, measured before the trainer is built), and a package-level
// allocation of the probe's moves it, not the trainer's ledger.
func TestRunProbeHeap(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the instruments read /proc")
	}
	if plantedProbeHeap == nil {
		t.Skip("the plant was freed by an earlier run (-count)")
	}
	run := func() (probe, ledger reconcile.Part) {
		r, err := Run(context.Background(), tinyJob(1), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range r.RSSReconciliation.End.Parts {
			switch p.Name {
			case "probe.heap":
				probe = p
			case "go.heap.objects.ledger":
				ledger = p
			}
		}
		if probe.Name == "" {
			t.Fatalf("no part probe.heap in %+v", r.RSSReconciliation.End.Parts)
		}
		return probe, ledger
	}
	with, ledgerWith := run()
	plantedProbeHeap = nil
	without, ledgerWithout := run()
	t.Logf("probe.heap with the %d B plant: %d B resident, %d B of heap (%s); without: %d B, %d B", plantedProbeHeapBytes,
		with.Bytes, with.ReservedBytes, with.Note, without.Bytes, without.ReservedBytes)
	if d := with.ReservedBytes - without.ReservedBytes; d < plantedProbeHeapBytes*9/10 || d > plantedProbeHeapBytes*11/10 {
		t.Errorf("probe.heap fell by %d B when the %d B plant was freed, want within ±10 %%", d, plantedProbeHeapBytes)
	}
	if ledgerWith.ReservedBytes != ledgerWithout.ReservedBytes {
		t.Errorf("the ledger's part moved with the probe's plant: %d B, then %d B", ledgerWith.ReservedBytes, ledgerWithout.ReservedBytes)
	}
}
