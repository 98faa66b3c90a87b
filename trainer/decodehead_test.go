package trainer

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"memprobe/ledger"
	"memprobe/trainer/data"
	"memprobe/trainer/decode"
	"memprobe/trainer/device"
	"memprobe/trainer/device/cudadrv"
	"memprobe/trainer/gemm"
	"memprobe/trainer/model"
)

// headCase is a model whose LM head the tests run both ways: random lnf
// (T, C) and wte (V, C), never all zero, and random targets. It uses the
// tiny preset's head (V=788, C=64, T=64), large enough for a blocked GEMM
// to block.
type headCase struct {
	cfg     model.Config
	p       *model.Params
	lnf     []float32 // (T, C)
	targets []uint16  // (T)
}

func newHeadCase(t testing.TB, seed uint64) headCase {
	t.Helper()
	cfg, err := model.Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, 5))
	hc := headCase{cfg: cfg, p: model.NewParams(cfg, make([]float32, cfg.NumParams())),
		lnf: make([]float32, cfg.Context*cfg.Dim), targets: make([]uint16, cfg.Context)}
	for i := range hc.p.WTE {
		hc.p.WTE[i] = float32(r.NormFloat64() * 0.3)
	}
	for i := range hc.lnf {
		hc.lnf[i] = float32(r.NormFloat64())
	}
	for i := range hc.targets {
		hc.targets[i] = uint16(r.IntN(cfg.Vocab))
	}
	return hc
}

// acts returns fresh activations holding the case's lnf, every other value
// NaN so that anything the head forgets to write shows.
func (hc headCase) acts() *model.Acts {
	a := model.NewActs(hc.cfg, make([]float32, hc.cfg.ActsSize()))
	for i := range a.Memory {
		a.Memory[i] = float32(math.NaN())
	}
	copy(a.LNF, hc.lnf)
	return a
}

// host runs model.ForwardHead, the reference.
func (hc headCase) host(g gemm.Backend) (*model.Acts, float32) {
	a := hc.acts()
	loss := model.ForwardHead(g, hc.cfg, hc.p, a, hc.targets)
	return a, loss
}

func maxDiff(a, b []float32) float64 {
	var m float64
	for i := range a {
		d := math.Abs(float64(a[i]) - float64(b[i]))
		if math.IsNaN(d) {
			return math.Inf(1)
		}
		m = math.Max(m, d)
	}
	return m
}

func backends() []gemm.Backend {
	bs := []gemm.Backend{gemm.Naive{}}
	for _, name := range []string{"gonum", "openblas", "avx2", "avx512"} {
		if g, err := gemm.Get(name); err == nil {
			bs = append(bs, g)
		}
	}
	return bs
}

// TestDecodeHeadMatchesForwardHead: for every mode and GEMM backend,
// forward fills a.Probs and a.Losses and returns the loss that
// model.ForwardHead gives on the same activations.
//
// Bit-identical: the batch mode with every backend (the logits are the same
// Sgemm call, (T, V) = lnf · wteᵀ, as nn.MatmulForward makes, and the
// softmax and loss are nn.SoftmaxCrossEntropyForward's float32 operations),
// and every mode with the naive backend (each output is one float32 sum over
// k in order, whatever the number of rows). Otherwise, the per-token modes
// compute each row with a one-row product that a blocked GEMM may sum in
// another order: probabilities within 1e-6 (absolute), losses within 1e-5
// (absolute, per position; they are about ln V = 6.7), the mean loss within
// 1e-5.
func TestDecodeHeadMatchesForwardHead(t *testing.T) {
	hc := newHeadCase(t, 1)
	for _, g := range backends() {
		want, wantLoss := hc.host(g)
		for _, m := range decode.Modes() {
			h, err := newDecodeHead("cpu", m.String(), g, hc.cfg, hc.p.WTE, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			a := hc.acts()
			loss, err := h.forward(a, hc.targets)
			if err != nil {
				t.Fatal(err)
			}
			if err := h.close(); err != nil {
				t.Fatal(err)
			}
			dp, dl := maxDiff(a.Probs, want.Probs), maxDiff(a.Losses, want.Losses)
			t.Logf("%s/%s: largest difference from ForwardHead: probabilities %g, losses %g; mean loss %v (host %v)", g.Name(), m, dp, dl, loss, wantLoss)
			exact := m == decode.Batch || g.Name() == "naive"
			switch {
			case exact && (dp != 0 || dl != 0 || loss != wantLoss):
				t.Errorf("%s/%s: not bit-identical to ForwardHead: probabilities %g, losses %g, loss %v vs %v", g.Name(), m, dp, dl, loss, wantLoss)
			case dp > 1e-6 || dl > 1e-5 || math.Abs(float64(loss-wantLoss)) > 1e-5:
				t.Errorf("%s/%s: differs from ForwardHead: probabilities %g > 1e-6 or losses %g > 1e-5 or loss %v vs %v", g.Name(), m, dp, dl, loss, wantLoss)
			}
			if loss != model.MeanLoss(a.Losses) {
				t.Errorf("%s/%s: returned %v, MeanLoss of a.Losses is %v", g.Name(), m, loss, model.MeanLoss(a.Losses))
			}
		}
	}
}

// TestDecodeHeadRefresh: after refresh the device's LM head is the new wte,
// and the head keeps matching ForwardHead over several updates.
func TestDecodeHeadRefresh(t *testing.T) {
	hc := newHeadCase(t, 2)
	g := gemm.Naive{}
	for _, m := range []decode.Mode{decode.PerTokenPrealloc, decode.Batch} {
		wte := slices.Clone(hc.p.WTE)
		h, err := newDecodeHead("cpu", m.String(), g, hc.cfg, wte, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		for step := 0; step < 3; step++ {
			for i := range wte {
				wte[i] = wte[i]*0.9 + float32(step)*0.01*float32(i%7)
			}
			if err := h.refresh(wte); err != nil {
				t.Fatal(err)
			}
			ref := hc
			ref.p = model.NewParams(hc.cfg, slices.Clone(hc.p.Memory))
			copy(ref.p.WTE, wte)
			want, wantLoss := ref.host(g)
			a := hc.acts()
			loss, err := h.forward(a, hc.targets)
			if err != nil {
				t.Fatal(err)
			}
			if d := maxDiff(a.Probs, want.Probs); d != 0 || loss != wantLoss {
				t.Errorf("%s step %d: after refresh probabilities differ by %g, loss %v vs %v", m, step, d, loss, wantLoss)
			}
		}
		if err := h.close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDecodeHeadCounts: per token, forward syncs once in the per-token
// modes and 1/T times in batch (one sync per sequence), launches twice per
// row (logits, softmax) or twice per sequence, and in steady state the
// prealloc and batch modes allocate nothing on the host: the head's own
// allocations, counted by site (allocsite), are zero; the runtime's own
// objects (a sudog when the caller blocks on the stream and the cache the
// window's GC emptied is dry, an m when the scheduler starts a thread) are
// logged, not blamed on the head. The per-token-copy and -view modes
// allocate by design: 4 and 2 objects per token (hidden copy, target,
// output record, probability row; output record, probability row), of
// which the target and the record are tiny objects that may share blocks.
// refresh is one sync and one V×C copy.
func TestDecodeHeadCounts(t *testing.T) {
	const calls = 20
	hc := newHeadCase(t, 3)
	T, C, V := hc.cfg.Context, hc.cfg.Dim, hc.cfg.Vocab
	for _, m := range decode.Modes() {
		acct := ledger.New().Account(ledger.DeviceBuffers)
		host := ledger.New().Account(ledger.DecodeHost)
		h, err := newDecodeHead("cpu", m.String(), gemm.Naive{}, hc.cfg, hc.p.WTE, acct, host)
		if err != nil {
			t.Fatal(err)
		}
		a := hc.acts()
		if _, err := h.forward(a, hc.targets); err != nil { // warm-up
			t.Fatal(err)
		}
		before := h.stats()
		rep := allocWindow(t, calls, func() {
			if _, err := h.forward(a, hc.targets); err != nil {
				t.Fatal(err)
			}
		})
		allocs := rep.ProgramObjects
		after := h.stats()
		n := float64(calls * T)
		syncs, launches := float64(after.Syncs-before.Syncs)/n, float64(after.Launches-before.Launches)/n
		t.Logf("%s: %.4f syncs/token, %.4f launches/token, %.3f host allocations/token, device peak %d B", m, syncs, launches, float64(allocs)/n, after.DeviceBytesPeak)
		wantSyncs, wantLaunches := 1.0, 2.0
		if m == decode.Batch {
			wantSyncs, wantLaunches = 1/float64(T), 2/float64(T)
		}
		if syncs != wantSyncs || launches != wantLaunches {
			t.Errorf("%s: %v syncs/token, %v launches/token; want %v, %v", m, syncs, launches, wantSyncs, wantLaunches)
		}
		switch m {
		case decode.PerTokenCopy, decode.PerTokenView:
			// The probability row (and in copy mode the hidden copy) are
			// whole objects; the target slice and the output record are
			// tiny and may share 16-byte blocks, which the count sees once
			// per block (see allocsite): more than the whole objects.
			whole := 1.0
			if m == decode.PerTokenCopy {
				whole = 2
			}
			if got := float64(allocs) / n; got <= whole {
				t.Errorf("%s: %v host allocations/token, want more than %v", m, got, whole)
			}
		default:
			if allocs != 0 {
				t.Errorf("%s: %d host allocations over %d forwards, want 0", m, allocs, calls)
			}
		}
		rows := 1
		if m == decode.Batch {
			rows = T
		}
		wantBytes := int64(4 * (V*C + rows*(C+V+1+device.OutStride)))
		if after.DeviceBytesInUse != wantBytes || acct.Current() != wantBytes {
			t.Errorf("%s: %d device bytes in use (ledger %d), want %d", m, after.DeviceBytesInUse, acct.Current(), wantBytes)
		}
		// The head's Go buffers on the host, each made once: the tokens
		// (T uint16), the cpu device's softmax row (V floats), and the
		// decoder's staging the mode keeps (float32): targets (T) but in
		// per-token-copy; output records (T × OutStride) in prealloc
		// and batch; a hidden and a probability row (C, V) in prealloc.
		hostFloats := map[decode.Mode]int{decode.PerTokenCopy: 0, decode.PerTokenView: T,
			decode.PerTokenPrealloc: T + T*device.OutStride + C + V, decode.Batch: T + T*device.OutStride}[m]
		if want := int64(2*T + 4*(V+hostFloats)); host.Current() != want || host.Peak() != want {
			t.Errorf("%s: host account holds %d B (peak %d), want %d", m, host.Current(), host.Peak(), want)
		}
		s0 := h.stats()
		if err := h.refresh(hc.p.WTE); err != nil {
			t.Fatal(err)
		}
		s1 := h.stats()
		if s1.Syncs-s0.Syncs != 1 || s1.H2DBytes-s0.H2DBytes != int64(4*V*C) {
			t.Errorf("%s: refresh made %d syncs and moved %d bytes, want 1 and %d", m, s1.Syncs-s0.Syncs, s1.H2DBytes-s0.H2DBytes, 4*V*C)
		}
		if err := h.close(); err != nil {
			t.Fatal(err)
		}
		if acct.Current() != 0 || host.Current() != 0 {
			t.Errorf("%s: %d device and %d host bytes still counted after close", m, acct.Current(), host.Current())
		}
	}
}

func TestDecodeHeadErrors(t *testing.T) {
	hc := newHeadCase(t, 4)
	g := gemm.Naive{}
	for _, c := range []struct {
		name, dev, mode string
		wte             []float32
		want            string
	}{
		{"bad mode", "cpu", "per-token", hc.p.WTE, `decode mode "per-token"`},
		{"bad device", "tpu", "batch", hc.p.WTE, `device "tpu" is not available`},
		{"short wte", "cpu", "batch", hc.p.WTE[:10], "lm head has 10 values"},
	} {
		h, err := newDecodeHead(c.dev, c.mode, g, hc.cfg, c.wte, nil, nil)
		if err == nil {
			h.close()
			t.Errorf("%s: no error", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %q, want one line containing %q", c.name, err, c.want)
		}
	}
	t.Setenv(cudadrv.EnvLibCUDA, "/nonexistent/libcuda.so.1")
	if _, err := newDecodeHead("cuda", "batch", g, hc.cfg, hc.p.WTE, nil, nil); err == nil || !strings.Contains(err.Error(), "no CUDA driver: /nonexistent/libcuda.so.1 not found") {
		t.Errorf("cuda without a driver: error %v, want \"no CUDA driver: ... not found\"", err)
	}
	h, err := newDecodeHead("cpu", "batch", g, hc.cfg, hc.p.WTE, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.close()
	if _, err := h.forward(hc.acts(), hc.targets[:3]); err == nil {
		t.Error("short targets: no error")
	}
	if err := h.refresh(hc.p.WTE[:3]); err == nil {
		t.Error("short wte on refresh: no error")
	}
}

func TestReadCheckpointParams(t *testing.T) {
	cfg, _ := model.Preset("micro")
	ds, err := data.Load("synthetic:4KB", cfg.Vocab, 1)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := New(Options{Config: cfg, Optimizer: model.DefaultAdamW, Threads: 1, Seed: 7, GEMM: "naive"}, ds)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	tr.Step()
	path := t.TempDir() + "/ck.bin"
	if err := tr.SaveCheckpoint(path); err != nil {
		t.Fatal(err)
	}
	info, p, err := ReadCheckpointParams(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if info.Config != cfg || info.Step != 1 || !slices.Equal(p.Memory, tr.Param.Memory) {
		t.Errorf("read back config %v at step %d and %d params; want %v at step 1 and the trainer's params", info.Config, info.Step, len(p.Memory), cfg)
	}
	if info.Data == nil || *info.Data != ds.Origin() {
		t.Errorf("read back data %+v, want %+v", info.Data, ds.Origin())
	}
	if _, _, err := ReadCheckpointParams(t.TempDir()+"/missing", nil); err == nil {
		t.Error("missing file: no error")
	}
}
