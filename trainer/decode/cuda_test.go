package decode

import (
	"testing"

	"memprobe/internal/fakecuda"
	"memprobe/trainer/device"
	"memprobe/trainer/gemm"
)

// TestCUDAModesMatchCPU runs every mode on the cuda device, over
// internal/fakecuda (a C stand-in for the driver whose streams run their
// work only at the next synchronize), against the cpu device on the same
// inputs: probabilities within 1e-6, losses within 1e-5 relative, tokens
// equal (greedy and sampled; the stand-in's kernel is the host reference's
// serial arithmetic in C, so only float rounding separates them). V is
// above the kernel's 256 threads. Per Decode of T positions: T waits in
// the per-token modes, 1 in batch, none of them implicit once warm, and
// no copy from pageable host memory.
func TestCUDAModesMatchCPU(t *testing.T) {
	lib := fakecuda.Use(t)
	const T, C, V, maxRows = 7, 24, 300, 8
	in := newInputs(3, T, C, V)
	for _, temp := range []float32{0, 0.8} {
		for _, mode := range Modes() {
			var res [2]result
			for i, name := range []string{"cpu", "cuda"} {
				dev, err := device.Open(name, gemm.Naive{}, nil)
				if err != nil {
					t.Fatal(err)
				}
				d, err := New(dev, mode, V, C, maxRows, in.lmHead)
				if err != nil {
					t.Fatal(err)
				}
				d.SetSampling(temp, 11)
				run := func() result {
					r := result{tokens: make([]uint16, T), probs: make([]float32, T*V), losses: make([]float32, T)}
					if r.loss, err = d.Decode(in.hidden, T, in.targets, r.tokens, r.probs, r.losses); err != nil {
						t.Fatalf("%s %s: %v", name, mode, err)
					}
					return r
				}
				run() // warm-up: staging grows here
				fakecuda.ResetCounters(lib)
				before := dev.Stats()
				res[i] = run()
				after := dev.Stats()
				if name == "cuda" {
					want := int64(T)
					if mode == Batch {
						want = 1
					}
					if waits := after.Syncs - before.Syncs; waits != want || after.ImplicitWaits != before.ImplicitWaits {
						t.Errorf("cuda %s: %d waits (%d implicit) per Decode of %d positions, want %d and none implicit",
							mode, waits, after.ImplicitWaits-before.ImplicitWaits, T, want)
					}
					c, err := fakecuda.ReadCounters(lib)
					if err != nil {
						t.Fatal(err)
					}
					if c.PageableCopies != 0 {
						t.Errorf("cuda %s: %d copies from pageable memory, want 0 (pinned staging)", mode, c.PageableCopies)
					}
				}
				if err := d.Close(); err != nil {
					t.Fatal(err)
				}
				if err := dev.Close(); err != nil {
					t.Fatal(err)
				}
			}
			cpu, cuda := res[0], res[1]
			if dp := maxAbsDiff(cuda.probs, cpu.probs); dp > 1e-6 {
				t.Errorf("%s T=%v: probabilities differ by %g, want <= 1e-6", mode, temp, dp)
			}
			for i := range cpu.losses {
				if d := float64(cuda.losses[i] - cpu.losses[i]); d > 1e-5*float64(cpu.losses[i]) || -d > 1e-5*float64(cpu.losses[i]) {
					t.Errorf("%s T=%v: loss %d: %v on cuda, %v on cpu", mode, temp, i, cuda.losses[i], cpu.losses[i])
				}
				if cuda.tokens[i] != cpu.tokens[i] {
					t.Errorf("%s T=%v: token %d: %d on cuda, %d on cpu", mode, temp, i, cuda.tokens[i], cpu.tokens[i])
				}
			}
		}
	}
}
