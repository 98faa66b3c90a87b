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
// inputs, with the decoder's host buffers page-locked (PinnedHost) and
// not: probabilities within 1e-6, losses within 1e-5 relative, tokens
// equal (greedy and sampled; the stand-in's kernel is the host reference's
// serial arithmetic in C, so only float rounding separates them). V is
// above the kernel's 256 threads. Per Decode of T positions: T waits in
// the per-token modes, 1 in batch, none of them implicit once warm, and
// no copy from pageable host memory. With PinnedHost, the prealloc and
// batch modes take their buffers from the device (and the caller's
// probabilities come from it too, as probe decode's do), their copies go
// straight by DMA, so no device-to-host staging is ever made (the staged
// modes make one); Close gives the blocks back.
func TestCUDAModesMatchCPU(t *testing.T) {
	lib := fakecuda.Use(t)
	const T, C, V, maxRows = 7, 24, 300, 8
	in := newInputs(3, T, C, V)
	for _, pinned := range []bool{false, true} {
		for _, temp := range []float32{0, 0.8} {
			for _, mode := range Modes() {
				var res [2]result
				for i, name := range []string{"cpu", "cuda"} {
					res[i] = decodeOn(t, lib, name, mode, pinned, temp, in, T, C, V, maxRows)
				}
				cpu, cuda := res[0], res[1]
				if dp := maxAbsDiff(cuda.probs, cpu.probs); dp > 1e-6 {
					t.Errorf("%s T=%v pinned=%v: probabilities differ by %g, want <= 1e-6", mode, temp, pinned, dp)
				}
				for i := range cpu.losses {
					if d := float64(cuda.losses[i] - cpu.losses[i]); d > 1e-5*float64(cpu.losses[i]) || -d > 1e-5*float64(cpu.losses[i]) {
						t.Errorf("%s T=%v pinned=%v: loss %d: %v on cuda, %v on cpu", mode, temp, pinned, i, cuda.losses[i], cpu.losses[i])
					}
					if cuda.tokens[i] != cpu.tokens[i] {
						t.Errorf("%s T=%v pinned=%v: token %d: %d on cuda, %d on cpu", mode, temp, pinned, i, cuda.tokens[i], cpu.tokens[i])
					}
				}
			}
		}
	}
	if c, err := fakecuda.ReadCounters(lib); err != nil || c.LivePinned != 0 {
		t.Errorf("after every decoder and device closed: %+v (%v), want no pinned block left", c, err)
	}
}

// decodeOn opens device name, decodes in with a decoder in mode (PinnedHost
// as pinned) twice, the second time measured, checks the cuda device's
// figures and closes both.
func decodeOn(t *testing.T, lib, name string, mode Mode, pinned bool, temp float32, in inputs, T, C, V, maxRows int) result {
	t.Helper()
	dev, err := device.Open(name, gemm.Naive{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := dev.Close(); err != nil {
			t.Fatal(err)
		}
	}()
	d, err := New(dev, mode, V, C, maxRows, in.lmHead, PinnedHost(pinned))
	if err != nil {
		t.Fatal(err)
	}
	hm, _ := dev.(device.HostMemory)
	direct := pinned && hm != nil && (mode == PerTokenPrealloc || mode == Batch)
	if d.PinnedHost() != direct {
		t.Errorf("%s %s pinned=%v: PinnedHost() = %v, want %v", name, mode, pinned, d.PinnedHost(), direct)
	}
	probs := make([]float32, T*V)
	if direct {
		if probs, err = hm.AllocHost("test.probs", T*V); err != nil {
			t.Fatal(err)
		}
	}
	d.SetSampling(temp, 11)
	run := func() result {
		r := result{tokens: make([]uint16, T), probs: probs, losses: make([]float32, T)}
		if r.loss, err = d.Decode(in.hidden, T, in.targets, r.tokens, r.probs, r.losses); err != nil {
			t.Fatalf("%s %s: %v", name, mode, err)
		}
		r.probs = append([]float32(nil), probs...) // a copy: the block goes before the comparison
		return r
	}
	run() // warm-up: staging grows here
	fakecuda.ResetCounters(lib)
	before := dev.Stats()
	res := run()
	after := dev.Stats()
	if name == "cuda" {
		want := int64(T)
		if mode == Batch {
			want = 1
		}
		if waits := after.Syncs - before.Syncs; waits != want || after.ImplicitWaits != before.ImplicitWaits {
			t.Errorf("cuda %s pinned=%v: %d waits (%d implicit) per Decode of %d positions, want %d and none implicit",
				mode, pinned, waits, after.ImplicitWaits-before.ImplicitWaits, T, want)
		}
		c, err := fakecuda.ReadCounters(lib)
		if err != nil {
			t.Fatal(err)
		}
		if c.PageableCopies != 0 {
			t.Errorf("cuda %s pinned=%v: %d copies from pageable memory, want 0 (pinned staging or page-locked buffers)", mode, pinned, c.PageableCopies)
		}
		var blocks int64
		for _, b := range hm.HostBuffers() {
			blocks += b.Bytes
		}
		// The device's own pinned memory: the parameter block (a few
		// hundred bytes) and each staging buffer made (1 MiB at least).
		// Staged, both directions have one; direct, nothing comes down
		// through staging (only the LM head and, in batch, the caller's
		// hidden states go up through it).
		own := after.PinnedHostBytes - blocks
		switch {
		case !direct && (blocks != 0 || own < 2<<20):
			t.Errorf("cuda %s pinned=%v: %d B of page-locked blocks, %d B of the device's own; want no blocks and staging both ways", mode, pinned, blocks, own)
		case direct && (blocks == 0 || own >= 2<<20):
			t.Errorf("cuda %s pinned=%v: %d B of blocks, %d B of the device's own: want blocks and no device-to-host staging", mode, pinned, blocks, own)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if direct {
		if got := hm.HostBuffers(); len(got) != 1 || got[0].Name != "test.probs" {
			t.Errorf("%s %s: after the decoder's Close the device holds %v, want only the caller's test.probs", name, mode, got)
		}
		if err := hm.FreeHost(probs); err != nil {
			t.Fatal(err)
		}
	}
	return res
}

// TestCUDAPinnedAllocs: with PinnedHost, the prealloc and batch modes
// still allocate nothing on the Go heap per Decode on the cuda device (the
// direct copies take no staging record, the blocks are the driver's
// memory), with the probabilities copied back into a page-locked block
// and into a Go slice.
func TestCUDAPinnedAllocs(t *testing.T) {
	fakecuda.Use(t)
	const T, C, V = 8, 24, 300
	in := newInputs(7, T, C, V)
	for _, mode := range []Mode{PerTokenPrealloc, Batch} {
		dev, err := device.Open("cuda", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		d, err := New(dev, mode, V, C, T, in.lmHead, PinnedHost(true))
		if err != nil {
			t.Fatal(err)
		}
		if !d.PinnedHost() {
			t.Fatalf("%s: PinnedHost(true) on cuda did not take effect", mode)
		}
		pinnedProbs, err := dev.(device.HostMemory).AllocHost("test.probs", T*V)
		if err != nil {
			t.Fatal(err)
		}
		tokens, losses := make([]uint16, T), make([]float32, T)
		for _, probs := range [][]float32{pinnedProbs, make([]float32, T*V)} {
			var derr error
			allocs := testing.AllocsPerRun(20, func() {
				if _, err := d.Decode(in.hidden, T, in.targets, tokens, probs, losses); err != nil {
					derr = err
				}
			})
			if derr != nil {
				t.Fatal(derr)
			}
			if allocs != 0 {
				t.Errorf("%s with pinned host buffers: %v allocations per Decode, want 0", mode, allocs)
			}
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		if err := dev.Close(); err != nil { // frees test.probs too
			t.Fatal(err)
		}
	}
}
