package ledger

import (
	"sync"
	"testing"
)

// TestConcurrentRegistration: many goroutines registering and releasing
// buffers at once (run under -race) leave exact counts behind.
func TestConcurrentRegistration(t *testing.T) {
	l := New()
	const goroutines, rounds = 16, 1000
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			// Account is safe to call concurrently and interns names.
			a := l.Account([]string{Params, Activations}[g%2])
			for i := 0; i < rounds; i++ {
				a.Alloc(64)
				if i%2 == 1 {
					a.Free(64)
				}
			}
		}(g)
	}
	wg.Wait()
	snap := l.Snapshot()
	if len(snap) != 2 || snap[0].Component != Activations || snap[1].Component != Params {
		t.Fatalf("snapshot %+v, want activations then params", snap)
	}
	for _, e := range snap {
		wantCur := int64(goroutines/2) * rounds / 2 * 64
		if e.CurrentBytes != wantCur || e.Allocs != goroutines/2*rounds || e.Frees != goroutines/2*rounds/2 {
			t.Errorf("%s: current %d allocs %d frees %d; want %d, %d, %d", e.Component, e.CurrentBytes, e.Allocs, e.Frees,
				wantCur, goroutines/2*rounds, goroutines/2*rounds/2)
		}
		if e.PeakBytes < e.CurrentBytes || e.PeakBytes > int64(goroutines/2)*rounds*64 {
			t.Errorf("%s: peak %d outside [%d, %d]", e.Component, e.PeakBytes, e.CurrentBytes, int64(goroutines/2)*rounds*64)
		}
	}
	if got, want := l.TotalCurrentBytes(), snap[0].CurrentBytes+snap[1].CurrentBytes; got != want {
		t.Errorf("total %d, want %d", got, want)
	}
}

// TestPeakIsHighWater: the peak is the most held at once, not the sum of
// allocations.
func TestPeakIsHighWater(t *testing.T) {
	a := New().Account(Arena)
	a.Alloc(100)
	a.Alloc(50)
	a.Free(120)
	a.Alloc(10)
	if a.Current() != 40 || a.Peak() != 150 {
		t.Errorf("current %d peak %d, want 40 and 150", a.Current(), a.Peak())
	}
	s := a.Float32s(8)
	if len(s) != 8 || a.Current() != 72 {
		t.Errorf("Float32s(8): len %d, current %d; want 8 and 72", len(s), a.Current())
	}
	a.FreeFloat32s(s)
	if a.Current() != 40 {
		t.Errorf("after FreeFloat32s: current %d, want 40", a.Current())
	}
}

// TestNilCountsNothing: a nil ledger and its nil accounts are how the
// instruments are switched off; they must work and count nothing.
func TestNilCountsNothing(t *testing.T) {
	var l *Ledger
	a := l.Account(Params)
	a.Alloc(10)
	a.Free(5)
	if s := a.Float32s(4); len(s) != 4 {
		t.Errorf("Float32s on a nil account: len %d", len(s))
	}
	if a.Current() != 0 || a.Peak() != 0 || a.Name() != "" || len(l.Snapshot()) != 0 || l.TotalCurrentBytes() != 0 {
		t.Error("a nil ledger counted something")
	}
}

// BenchmarkAlloc is the cost per registration in the step loop: atomic
// adds, no lock.
func BenchmarkAlloc(b *testing.B) {
	a := New().Account(Activations)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			a.Alloc(64)
			a.Free(64)
		}
	})
}

// TestMakeRecordsWhatWasMade: Make and Record charge the slice's capacity
// times its element size, Drop returns it, LenBytes measures a part.
func TestMakeRecordsWhatWasMade(t *testing.T) {
	l := New()
	a := l.Account("x")
	f := Make[float32](a, 10)
	u := Make[uint16](a, 7)
	if len(f) != 10 || len(u) != 7 || a.Current() != 10*4+7*2 {
		t.Fatalf("len %d, %d; current %d B, want 54", len(f), len(u), a.Current())
	}
	big := make([]int64, 3, 8)
	Record(a, big)
	if a.Current() != 54+8*8 {
		t.Errorf("after Record of cap 8 int64s: %d B, want %d", a.Current(), 54+64)
	}
	if LenBytes(big) != 24 || SliceBytes(big) != 64 {
		t.Errorf("LenBytes %d SliceBytes %d, want 24 and 64", LenBytes(big), SliceBytes(big))
	}
	Drop(a, f)
	Drop(a, u)
	Drop(a, big)
	if a.Current() != 0 || a.Peak() != 118 {
		t.Errorf("current %d peak %d after dropping all, want 0 and 118", a.Current(), a.Peak())
	}
	if s := Make[byte](nil, 5); len(s) != 5 {
		t.Errorf("Make on a nil account made %d elements", len(s))
	}
}
