package device

import (
	"math/rand"
	"testing"
)

func BenchmarkSoftmaxRows(b *testing.B) {
	const rows, V = 128, 788
	r := rand.New(rand.NewSource(1))
	src := randSlice(r, rows*V)
	logits := make([]float32, rows*V)
	out := make([]float32, rows*OutStride)
	tg := make([]float32, rows)
	for i := range tg {
		tg[i] = float32(r.Intn(V))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		copy(logits, src)
		softmaxSampleRows(out, logits, tg, rows, V, Sampling{}, make([]float32, V))
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows*V), "ns/elem")
}

// BenchmarkSync is one fence round trip on an idle cpu device: the
// handoff to the stream thread and back, the floor of a per-token sync.
func BenchmarkSync(b *testing.B) {
	d := NewCPU(nil, nil)
	defer d.Close()
	for i := 0; i < b.N; i++ {
		if err := d.Sync(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCommandsAndSync is the per-token command pattern without
// kernels: six one-float copies, then a sync.
func BenchmarkCommandsAndSync(b *testing.B) {
	d := NewCPU(nil, nil)
	defer d.Close()
	buf, _ := d.Alloc("test", 1)
	host := make([]float32, 1)
	for i := 0; i < b.N; i++ {
		for j := 0; j < 3; j++ {
			d.CopyToDevice(buf, 0, host)
			d.CopyToHost(host, buf, 0)
		}
		if err := d.Sync(); err != nil {
			b.Fatal(err)
		}
	}
}
