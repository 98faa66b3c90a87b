package allocsite_test

import (
	"runtime"
	"strings"
	"testing"

	"memprobe/instrument/allocsite"
)

var sink [][]byte

//go:noinline
func allocateSome(n, size int) {
	for i := 0; i < n; i++ {
		sink = append(sink[:0], make([]byte, size))
	}
}

// TestWindowCountsProgramSite: every allocation of a known loop is found
// at its site, exactly (MemProfileRate 1), and the rate is restored.
func TestWindowCountsProgramSite(t *testing.T) {
	rate := runtime.MemProfileRate
	allocateSome(10, 4096) // sink's backing array exists before the window
	w := allocsite.Begin(allocsite.Options{OwnPrefixes: []string{"memprobe/nothing/"}})
	const steps, perStep = 5, 40
	for i := 0; i < steps; i++ {
		allocateSome(perStep, 4096)
	}
	rep := w.End(steps)
	if runtime.MemProfileRate != rate {
		t.Errorf("MemProfileRate %d after End, want %d restored", runtime.MemProfileRate, rate)
	}
	if !rep.Exact || rep.MemProfileRate != 1 {
		t.Errorf("rate %d exact %v, want 1 and true", rep.MemProfileRate, rep.Exact)
	}
	var found *allocsite.Site
	for i, s := range rep.Sites {
		if strings.HasSuffix(s.Function, ".allocateSome") {
			found = &rep.Sites[i]
		}
	}
	if found == nil {
		t.Fatalf("no site allocateSome in %+v", rep.Sites)
	}
	if found.Class != allocsite.Program || found.Objects != steps*perStep || found.Bytes != steps*perStep*4096 {
		t.Errorf("allocateSome: class %s, %d objects %d B; want program, %d objects %d B", found.Class, found.Objects, found.Bytes, steps*perStep, steps*perStep*4096)
	}
	if found.ObjectsPerStep != perStep {
		t.Errorf("objects per step %v, want %d", found.ObjectsPerStep, perStep)
	}
	if rep.ProgramObjects < steps*perStep {
		t.Errorf("program objects %d, want at least %d", rep.ProgramObjects, steps*perStep)
	}
	for _, s := range rep.Sites {
		if strings.HasPrefix(s.Function, "memprobe/instrument/allocsite.") {
			t.Errorf("the window's own allocation at %s is reported", s.Function)
		}
	}
}

// TestWindowProbeClass: allocations under an own prefix are the probe's.
func TestWindowProbeClass(t *testing.T) {
	w := allocsite.Begin(allocsite.Options{OwnPrefixes: []string{"memprobe/instrument/allocsite_test"}})
	allocateSome(7, 128)
	rep := w.End(1)
	if rep.ProbeObjects < 7 {
		t.Errorf("probe objects %d, want at least 7 (allocateSome is in an own package)", rep.ProbeObjects)
	}
	for _, s := range rep.Sites {
		if strings.HasSuffix(s.Function, ".allocateSome") && s.Class != allocsite.Probe {
			t.Errorf("allocateSome classed %s, want probe", s.Class)
		}
	}
}

//go:noinline
func walkSome(n, size int) { allocateSome(n, size) }

// TestWindowWalkBytes: the probe's allocations made under a walk's prefix
// are counted apart as well, and only those.
func TestWindowWalkBytes(t *testing.T) {
	allocateSome(1, 64)
	w := allocsite.Begin(allocsite.Options{OwnPrefixes: []string{"memprobe/instrument/allocsite_test"},
		Walks: []string{"memprobe/instrument/allocsite_test.walkSome"}})
	walkSome(9, 1024)
	allocateSome(5, 1024)
	rep := w.End(1)
	if rep.ProbeWalkBytes != 9*1024 || rep.ProbeBytes < 14*1024 {
		t.Errorf("walk bytes %d of the probe's %d, want 9216 of at least 14336", rep.ProbeWalkBytes, rep.ProbeBytes)
	}
}
