package job

import (
	"context"
	"io"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"memprobe/instrument/profiling"
)

// TestAllocsBySite: the headline allocations per step are the program's
// own, counted by site over the steady-state steps with every allocation
// recorded; the trainer makes none (naive GEMM starts no goroutines), and
// whatever the runtime or the probe allocated is named apart.
func TestAllocsBySite(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the instruments read /proc")
	}
	rate := runtime.MemProfileRate
	o := tinyJob(6)
	o.Trainer.GEMM = "naive"
	r, err := Run(context.Background(), o, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	s := r.AllocsBySite
	if s == nil {
		t.Fatal("no allocs_by_site")
	}
	if !s.Exact || s.Steps != 5 {
		t.Errorf("allocs_by_site exact %v over %d steps, want true over 5", s.Exact, s.Steps)
	}
	for _, site := range s.Sites {
		t.Logf("%s %d objects %d B at %s from %s", site.Class, site.Objects, site.Bytes, site.Function, site.CalledFrom)
	}
	if s.ProgramObjects != 0 || r.HeapAllocsPerStep != 0 {
		t.Errorf("program allocations %d (headline %v/step), want 0", s.ProgramObjects, r.HeapAllocsPerStep)
	}
	if runtime.MemProfileRate != rate {
		t.Errorf("MemProfileRate %d after the job, want %d", runtime.MemProfileRate, rate)
	}
	if r.Warnings == nil || len(r.Warnings) != 0 {
		t.Errorf("warnings %q without profiles, want none (and not nil)", r.Warnings)
	}

	// A heap profile owns the rate: the sites are then sampled, and say so.
	o.Steps = 2
	o.Profiling = profiling.Options{Heap: filepath.Join(t.TempDir(), "heap.pprof")}
	r, err = Run(context.Background(), o, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if s := r.AllocsBySite; s == nil || s.Exact || s.MemProfileRate != runtime.MemProfileRate {
		t.Errorf("with a heap profile: %+v, want a sampled report at rate %d", s, runtime.MemProfileRate)
	}
	// ... and the result says which figure that changed.
	if len(r.Warnings) == 0 || !strings.Contains(r.Warnings[0], "go_heap_allocs_per_step") || !strings.Contains(r.Warnings[0], "MemProfileRate") {
		t.Errorf("with a heap profile: warnings %q, want one naming go_heap_allocs_per_step and the profile rate", r.Warnings)
	}
}
