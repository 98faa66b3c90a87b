package reconcile

import (
	"fmt"
	"math"
	"runtime"
	"strings"
)

// ProbeHeap is the Go heap that the probe itself holds in the process it
// measures: what its own packages and the libraries it links allocated
// (their package initialisation, the command line, the job's set-up), by
// the in-use heap profile. Compute shows Input.ProbeHeap as the part
// probe.heap, out of heap/objects, beside the trainer's ledger: so that a
// reader can tell the trainer's bytes from the tool's. The probe's
// allocations are not kept out of the measured process (the instruments
// run in it), they are named.
type ProbeHeap struct {
	// Bytes is the estimated in-use bytes: each profile record scaled
	// for sampling as pprof scales it.
	Bytes int64
	// Records counts the profile records (allocation sites) in Bytes.
	Records int
	// Note says how and when it was measured.
	Note string
}

// TrainerPackage is the import path of the trainer: an allocation with it
// or a package below it on its stack is the trainer's, wherever it was
// called from.
const TrainerPackage = "memprobe/trainer"

// MeasureProbeHeap runs a garbage collection (the heap profile is as of
// the last one) and sums the in-use records of the heap profile
// (runtime.MemProfile) that are the probe's (probeFrames). Call it before
// the trainer allocates: the probe's allocations made later (the
// sampler's buffers, the walks) are not in it. The profile samples one
// allocation per runtime.MemProfileRate bytes (512 KiB by default) and
// the records are scaled by the rate in effect now: where it was raised
// after the packages' initialisation, their records are undercounted.
func MeasureProbeHeap(when string) ProbeHeap {
	runtime.GC()
	var recs []runtime.MemProfileRecord
	n, _ := runtime.MemProfile(nil, false)
	for {
		recs = make([]runtime.MemProfileRecord, n+64)
		var ok bool
		if n, ok = runtime.MemProfile(recs, false); ok {
			recs = recs[:n]
			break
		}
	}
	rate := runtime.MemProfileRate
	var h ProbeHeap
	var funcs []string
	for i := range recs {
		r := &recs[i]
		funcs = funcs[:0]
		frames := runtime.CallersFrames(r.Stack())
		for {
			f, more := frames.Next()
			funcs = append(funcs, f.Function)
			if !more {
				break
			}
		}
		if !probeFrames(funcs) {
			continue
		}
		h.Bytes += scaleHeapSample(r.InUseObjects(), r.InUseBytes(), rate)
		h.Records++
	}
	sampled := "every allocation sampled"
	if rate > 1 {
		sampled = "one allocation sampled per " + iec(int64(rate))
	}
	h.Note = fmt.Sprintf("Go heap the probe's packages and libraries hold (heap profile %s, %d allocation sites, %s)",
		when, h.Records, sampled)
	return h
}

// probeFrames says whether an allocation whose stack holds the functions
// funcs (innermost first) is the probe's: none of them is in the trainer
// (TrainerPackage: the trainer's buffers go through the probe's ledger,
// and the trainer's package initialisation is the trainer's), and one is
// in the probe's own code ("main", memprobe's other packages) or in a
// library outside the standard library (an import path whose first
// element has a dot). What only the runtime and the standard library
// allocated is any Go program's, and neither's.
func probeFrames(funcs []string) bool {
	probe := false
	for _, f := range funcs {
		pkg := funcPackage(f)
		switch {
		case pkg == TrainerPackage, strings.HasPrefix(pkg, TrainerPackage+"/"):
			return false
		case pkg == "main", strings.HasPrefix(pkg, "memprobe/"):
			probe = true
		case strings.Contains(strings.SplitN(pkg, "/", 2)[0], "."):
			probe = true
		}
	}
	return probe
}

// funcPackage is the import path of the package a function belongs to, by
// its name as runtime.Frame gives it: "github.com/a/b.(*T).M" is
// "github.com/a/b", "main.main" is "main".
func funcPackage(f string) string {
	if i := strings.IndexByte(f, '['); i >= 0 {
		f = f[:i] // type arguments may hold other packages' paths
	}
	slash := strings.LastIndexByte(f, '/')
	if i := strings.IndexByte(f[slash+1:], '.'); i >= 0 {
		return f[:slash+1+i]
	}
	return f
}

// scaleHeapSample is the in-use bytes a sampled record stands for
// (pprof's scaleHeapSample): an allocation of size s is sampled with
// probability 1 − exp(−s/rate).
func scaleHeapSample(objects, bytes int64, rate int) int64 {
	if objects <= 0 || bytes <= 0 {
		return 0
	}
	if rate <= 1 {
		return bytes
	}
	avg := float64(bytes) / float64(objects)
	return int64(float64(bytes) / (1 - math.Exp(-avg/float64(rate))))
}
