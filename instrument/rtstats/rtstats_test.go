package rtstats

import (
	"runtime"
	"testing"
)

var sink [][]byte

func TestReadAllocatesNothing(t *testing.T) {
	r := New()
	var s Snapshot
	if n := testing.AllocsPerRun(100, func() { r.Read(&s) }); n != 0 {
		t.Errorf("Read allocates %v objects per call, want 0", n)
	}
}

func TestSnapshotPlausible(t *testing.T) {
	s := New().Snapshot()
	m := s.Memory
	sum := m.HeapObjectsBytes + m.HeapUnusedBytes + m.HeapFreeBytes + m.HeapReleasedBytes +
		m.HeapStacksBytes + m.OSStacksBytes + m.MetadataBytes() + m.ProfilingBucketsBytes + m.OtherBytes
	if sum != m.TotalBytes {
		t.Errorf("memory classes sum to %d, total is %d", sum, m.TotalBytes)
	}
	if s.HeapAllocsObjects <= 0 || s.HeapLiveBytes < 0 || s.Goroutines < 1 ||
		s.GOMAXPROCS != int64(runtime.GOMAXPROCS(0)) || s.RuntimeThreads < 1 {
		t.Errorf("implausible snapshot %+v", s)
	}
	if runtime.GOOS == "linux" && s.OSThreads < s.RuntimeThreads {
		t.Errorf("OSThreads %d < RuntimeThreads %d", s.OSThreads, s.RuntimeThreads)
	}
}

func TestDeltaSeesAllocations(t *testing.T) {
	// Objects above 32 KiB are counted at allocation time; smaller ones
	// only when their span leaves the mcache (see the package comment), so
	// the exact lower bound is checked with large objects.
	const n, size = 64, 64 << 10
	r := New()
	var a, b Snapshot
	r.Read(&a)
	for range n {
		sink = append(sink, make([]byte, size))
	}
	r.Read(&b)
	sink = nil
	d := Delta(a, b)
	if d.HeapAllocsObjects < n {
		t.Errorf("delta allocs = %d objects, want >= %d", d.HeapAllocsObjects, n)
	}
	if d.HeapAllocsBytes < n*size {
		t.Errorf("delta allocs = %d bytes, want >= %d", d.HeapAllocsBytes, n*size)
	}
}

func TestDeltaGCCounters(t *testing.T) {
	r := New()
	var a, b Snapshot
	r.Read(&a)
	runtime.GC()
	r.Read(&b)
	d := Delta(a, b)
	if d.GCCycles < 1 || d.GCPauses < 1 || d.GCPauseTotalNs < 0 {
		t.Errorf("after runtime.GC: %d cycles, %d pauses, %d ns", d.GCCycles, d.GCPauses, d.GCPauseTotalNs)
	}
}

func TestSteady(t *testing.T) {
	snaps := make([]Snapshot, 6)
	// Warm-up step allocates 1000; steady steps allocate 10, 12, 8, 10.
	allocs := []int64{100, 1100, 1110, 1122, 1130, 1140}
	for i, a := range allocs {
		snaps[i].HeapAllocsObjects = a
		snaps[i].HeapAllocsBytes = a * 16
	}
	st, err := Steady(snaps, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := SteadyState{Steps: 4, WarmupSteps: 1, AllocsPerStepObjects: 10, AllocsPerStepBytes: 160,
		MinStepAllocsObjects: 8, MaxStepAllocsObjects: 12}
	if st != want {
		t.Errorf("Steady = %+v, want %+v", st, want)
	}
	if _, err := Steady(snaps, 5); err == nil {
		t.Error("Steady with no step after warm-up: no error")
	}
	if _, err := Steady(snaps, -1); err == nil {
		t.Error("Steady with negative warm-up: no error")
	}
}

func TestSteadyLive(t *testing.T) {
	r := New()
	snaps := make([]Snapshot, 0, 11)
	snaps = append(snaps, Snapshot{})
	r.Read(&snaps[0])
	for range 10 {
		for range 4 {
			sink = append(sink, make([]byte, 40<<10))
		}
		snaps = append(snaps, Snapshot{})
		r.Read(&snaps[len(snaps)-1])
	}
	sink = nil
	st, err := Steady(snaps, 2)
	if err != nil {
		t.Fatal(err)
	}
	if st.AllocsPerStepObjects < 4 || st.AllocsPerStepBytes < 4*40<<10 {
		t.Errorf("steady %+v, want >= 4 allocs and 160 KiB per step", st)
	}
}

func BenchmarkRead(b *testing.B) {
	r := New()
	var s Snapshot
	b.ReportAllocs()
	for b.Loop() {
		r.Read(&s)
	}
}
