package decode

import (
	"math"
	"math/rand"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"

	"memprobe/ledger"
	"memprobe/trainer/device"
	"memprobe/trainer/gemm"
)

// Small shapes for correctness; the benchmark uses the seed sizes.
const (
	tT, tC, tV, tMaxRows = 7, 24, 53, 8
)

type inputs struct {
	hidden  []float32 // (T, C)
	lmHead  []float32 // (V, C)
	targets []uint16  // (T)
}

func newInputs(seed int64, T, C, V int) inputs {
	r := rand.New(rand.NewSource(seed))
	in := inputs{hidden: make([]float32, T*C), lmHead: make([]float32, V*C), targets: make([]uint16, T)}
	for i := range in.hidden {
		in.hidden[i] = r.Float32()*2 - 1
	}
	for i := range in.lmHead {
		in.lmHead[i] = r.Float32()*2 - 1
	}
	for i := range in.targets {
		in.targets[i] = uint16(r.Intn(V))
	}
	return in
}

type result struct {
	tokens []uint16
	probs  []float32
	losses []float32
	loss   float32
}

func openDecoder(t testing.TB, g gemm.Backend, mode Mode, in inputs, V, C, maxRows int) (device.Device, *Decoder) {
	t.Helper()
	dev, err := device.Open("cpu", g, nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(dev, mode, V, C, maxRows, in.lmHead)
	if err != nil {
		t.Fatal(err)
	}
	return dev, d
}

func decodeOnce(t *testing.T, g gemm.Backend, mode Mode, in inputs, temperature float32) result {
	t.Helper()
	dev, d := openDecoder(t, g, mode, in, tV, tC, tMaxRows)
	defer dev.Close()
	defer d.Close()
	d.SetSampling(temperature, 42)
	res := result{tokens: make([]uint16, tT), probs: make([]float32, tT*tV), losses: make([]float32, tT)}
	var err error
	if res.loss, err = d.Decode(in.hidden, tT, in.targets, res.tokens, res.probs, res.losses); err != nil {
		t.Fatal(err)
	}
	return res
}

// reference is the plain host decode in float64: greedy tokens,
// probabilities and the mean loss.
func reference(in inputs, T, C, V int) result {
	res := result{tokens: make([]uint16, T), probs: make([]float32, T*V), losses: make([]float32, T)}
	var loss float64
	for t := 0; t < T; t++ {
		logit := make([]float64, V)
		arg := 0
		for v := 0; v < V; v++ {
			for c := 0; c < C; c++ {
				logit[v] += float64(in.hidden[t*C+c]) * float64(in.lmHead[v*C+c])
			}
			if logit[v] > logit[arg] {
				arg = v
			}
		}
		var sum float64
		for _, l := range logit {
			sum += math.Exp(l - logit[arg])
		}
		for v, l := range logit {
			res.probs[t*V+v] = float32(math.Exp(l-logit[arg]) / sum)
		}
		res.tokens[t] = uint16(arg)
		l := -(logit[in.targets[t]] - logit[arg] - math.Log(sum))
		res.losses[t] = float32(l)
		loss += l
	}
	res.loss = float32(loss / float64(T))
	return res
}

func maxAbsDiff(a, b []float32) float64 {
	var m float64
	for i := range a {
		m = math.Max(m, math.Abs(float64(a[i])-float64(b[i])))
	}
	return m
}

// TestModesAgree: with the naive backend every mode gives the batch mode's
// tokens, probabilities and loss bit for bit (each row is the same float32
// computation), and all are within 1e-6 (probabilities, absolute) and 1e-5
// (mean loss) of the float64 host reference. With the default backend the
// modes agree within 1e-6: a blocked GEMM may sum a row in another order
// when it is part of a batch.
func TestModesAgree(t *testing.T) {
	in := newInputs(1, tT, tC, tV)
	ref := reference(in, tT, tC, tV)
	for _, g := range []gemm.Backend{gemm.Naive{}, gemm.Default()} {
		batch := decodeOnce(t, g, Batch, in, 0)
		for _, m := range Modes() {
			got := decodeOnce(t, g, m, in, 0)
			for i := range got.tokens {
				if got.tokens[i] != ref.tokens[i] || got.tokens[i] != batch.tokens[i] {
					t.Errorf("%s/%s: token %d = %d, reference %d, batch %d", g.Name(), m, i, got.tokens[i], ref.tokens[i], batch.tokens[i])
				}
			}
			dRef, dBatch := maxAbsDiff(got.probs, ref.probs), maxAbsDiff(got.probs, batch.probs)
			t.Logf("%s/%s: largest probability difference: %g from reference, %g from batch; loss %v (reference %v)", g.Name(), m, dRef, dBatch, got.loss, ref.loss)
			if dRef > 1e-6 || dBatch > 1e-6 {
				t.Errorf("%s/%s: probabilities differ by %g (reference), %g (batch) > 1e-6", g.Name(), m, dRef, dBatch)
			}
			if math.Abs(float64(got.loss-ref.loss)) > 1e-5 {
				t.Errorf("%s/%s: loss %v, reference %v", g.Name(), m, got.loss, ref.loss)
			}
			if d := maxAbsDiff(got.losses, ref.losses); d > 1e-5 {
				t.Errorf("%s/%s: per-position losses differ from the reference by %g > 1e-5", g.Name(), m, d)
			}
			var sum float64
			for _, l := range got.losses {
				sum += float64(l)
			}
			if mean := float32(sum / float64(len(got.losses))); mean != got.loss {
				t.Errorf("%s/%s: returned loss %v is not the float64 mean %v of the losses written", g.Name(), m, got.loss, mean)
			}
			if _, naive := g.(gemm.Naive); naive && (dBatch != 0 || maxAbsDiff(got.losses, batch.losses) != 0 || got.loss != batch.loss) {
				t.Errorf("%s/%s: not bit-identical to batch (probabilities %g, loss %v vs %v)", g.Name(), m, dBatch, got.loss, batch.loss)
			}
		}
	}
}

// TestSamplingAgrees: with temperature 1 every mode draws the same tokens,
// the same tokens a host sampler draws from the batch probabilities with
// device.Uniform, and not only the argmax.
func TestSamplingAgrees(t *testing.T) {
	in := newInputs(2, tT, tC, tV)
	for i := range in.lmHead {
		in.lmHead[i] *= 0.1 // flatter distributions, so sampling leaves the argmax
	}
	batch := decodeOnce(t, gemm.Naive{}, Batch, in, 1)
	greedy := reference(in, tT, tC, tV)
	notArgmax := 0
	for pos := 0; pos < tT; pos++ {
		u := device.Uniform(42, uint64(pos))
		var cum float64
		want := tV - 1
		for v := 0; v < tV; v++ {
			cum += float64(batch.probs[pos*tV+v])
			if u < cum {
				want = v
				break
			}
		}
		if int(batch.tokens[pos]) != want {
			t.Errorf("position %d: sampled %d, host sampler %d", pos, batch.tokens[pos], want)
		}
		if batch.tokens[pos] != greedy.tokens[pos] {
			notArgmax++
		}
	}
	if notArgmax == 0 {
		t.Error("sampling at temperature 1 always picked the argmax")
	}
	for _, m := range Modes() {
		got := decodeOnce(t, gemm.Naive{}, m, in, 1)
		for i := range got.tokens {
			if got.tokens[i] != batch.tokens[i] {
				t.Errorf("%s: sampled token %d = %d, batch %d", m, i, got.tokens[i], batch.tokens[i])
			}
		}
	}
}

func TestDeviceMemoryReturns(t *testing.T) {
	acct := ledger.New().Account(ledger.DeviceBuffers)
	dev, err := device.Open("cpu", gemm.Naive{}, acct)
	if err != nil {
		t.Fatal(err)
	}
	keep, _ := dev.Alloc("caller", 3) // something of the caller's, to make the baseline nonzero
	base := dev.Stats().DeviceBytesInUse
	in := newInputs(4, tT, tC, tV)
	for _, m := range Modes() {
		d, err := New(dev, m, tV, tC, tMaxRows, in.lmHead)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.Decode(in.hidden, tT, in.targets, make([]uint16, tT), nil, nil); err != nil {
			t.Fatal(err)
		}
		rows := 1
		if m == Batch {
			rows = tMaxRows
		}
		want := base + int64(4*(tV*tC+rows*(tC+tV+1+device.OutStride)))
		if got := dev.Stats().DeviceBytesInUse; got != want {
			t.Errorf("%s: %d device bytes in use, want %d", m, got, want)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		if got := dev.Stats().DeviceBytesInUse; got != base || acct.Current() != base {
			t.Errorf("%s: after Close %d bytes in use (ledger %d), want %d", m, got, acct.Current(), base)
		}
	}
	_ = keep
	if err := dev.Close(); err != nil {
		t.Fatal(err)
	}
	if got := dev.Stats().DeviceBytesInUse; got != 0 || acct.Current() != 0 {
		t.Errorf("after device Close: %d bytes in use, ledger %d", got, acct.Current())
	}
}

func TestParseMode(t *testing.T) {
	for _, m := range Modes() {
		got, err := ParseMode(m.String())
		if err != nil || got != m {
			t.Errorf("ParseMode(%q) = %v, %v", m.String(), got, err)
		}
	}
	_, err := ParseMode("per-token")
	if err == nil || !strings.Contains(err.Error(), "per-token-copy, per-token-view, per-token-prealloc, batch") {
		t.Errorf("ParseMode(per-token) = %v, want an error listing the modes", err)
	}
}

func TestBadArguments(t *testing.T) {
	in := newInputs(5, tT, tC, tV)
	dev, d := openDecoder(t, gemm.Naive{}, Batch, in, tV, tC, tMaxRows)
	defer dev.Close()
	defer d.Close()
	tokens := make([]uint16, tT)
	bad := append([]uint16(nil), in.targets...)
	bad[2] = tV
	for name, call := range map[string]func() error{
		"T too big":    func() error { _, err := d.Decode(in.hidden, tMaxRows+1, nil, make([]uint16, 9), nil, nil); return err },
		"short hidden": func() error { _, err := d.Decode(in.hidden[:5], tT, nil, tokens, nil, nil); return err },
		"short probs":  func() error { _, err := d.Decode(in.hidden, tT, nil, tokens, make([]float32, 3), nil); return err },
		"target >= V":  func() error { _, err := d.Decode(in.hidden, tT, bad, tokens, nil, nil); return err },
		"short losses": func() error {
			_, err := d.Decode(in.hidden, tT, in.targets, tokens, nil, make([]float32, 2))
			return err
		},
		"losses, no targets": func() error {
			_, err := d.Decode(in.hidden, tT, nil, tokens, nil, make([]float32, tT))
			return err
		},
		"short weights": func() error { return d.SetWeights(in.lmHead[:3]) },
	} {
		if err := call(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := New(dev, Batch, 70000, tC, 1, make([]float32, 70000*tC)); err == nil {
		t.Error("V above uint16: no error")
	}
}

// BenchmarkDecode runs each mode at the seed sizes (T=128, C=256, V=788)
// with the default GEMM backend, training-shaped: targets given and the
// (T, V) probabilities copied back.
func BenchmarkDecode(b *testing.B) {
	const T, C, V = 128, 256, 788
	in := newInputs(6, T, C, V)
	for _, m := range Modes() {
		b.Run(m.String(), func(b *testing.B) {
			dev, d := openDecoder(b, gemm.Default(), m, in, V, C, T)
			defer dev.Close()
			defer d.Close()
			tokens, probs := make([]uint16, T), make([]float32, T*V)
			if _, err := d.Decode(in.hidden, T, in.targets, tokens, probs, nil); err != nil {
				b.Fatal(err)
			}
			samples := []metrics.Sample{{Name: "/gc/heap/allocs:objects"}, {Name: "/gc/heap/tiny/allocs:objects"}}
			runtime.GC() // flush the per-P caches runtime/metrics counts from
			metrics.Read(samples)
			objs := samples[0].Value.Uint64() + samples[1].Value.Uint64()
			syncs := dev.Stats().Syncs
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := d.Decode(in.hidden, T, in.targets, tokens, probs, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			runtime.GC()
			metrics.Read(samples)
			n := float64(b.N * T)
			b.ReportMetric(n/b.Elapsed().Seconds(), "tokens/s")
			b.ReportMetric(float64(dev.Stats().Syncs-syncs)/n, "syncs/token")
			b.ReportMetric(float64(samples[0].Value.Uint64()+samples[1].Value.Uint64()-objs)/n, "allocs/token")
		})
	}
}
