package reconcile

import (
	"fmt"
	"runtime"
	"runtime/metrics"
)

// ProbeHeap is the Go heap that the probe itself holds in the process it
// measures: the heap live before the trainer is built (the probe's
// packages and the libraries it links, their initialisation, the command
// line, the job's set-up, and the runtime's and standard library's own).
// Compute shows Input.ProbeHeap as the part probe.heap, out of
// heap/objects, beside the trainer's ledger: so that a reader can tell the
// trainer's bytes from the tool's. The probe's allocations are not kept
// out of the measured process (the instruments run in it), they are
// named. The trainer's own package initialisation (about 2 KiB) is in it:
// telling it apart takes the heap profile, whose sampling (one allocation
// per 512 KiB) moved the figure by 1.6 MiB between identical runs.
type ProbeHeap struct {
	// Bytes is what the garbage collector marked live (/gc/heap/live):
	// exact, no sampling.
	Bytes int64
	// Note says how and when it was measured.
	Note string
}

// MeasureProbeHeap runs two garbage collections (the second empties the
// sync.Pools' victim caches) and takes the heap they left live. Call it
// before the trainer is built: the probe's allocations made later (the
// sampler's buffers, the walks) are not in it, and whatever is live then
// is not the trainer's. Identical runs read the same figure to a few KiB.
func MeasureProbeHeap(when string) ProbeHeap {
	runtime.GC()
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	var h ProbeHeap
	if s[0].Value.Kind() == metrics.KindUint64 {
		h.Bytes = int64(s[0].Value.Uint64())
	}
	h.Note = fmt.Sprintf("Go heap live %s (exact, after a GC): the probe's packages and libraries, the runtime's and standard library's own", when)
	return h
}
