package decodebench

import (
	"fmt"
	"math"

	"memprobe/ledger"
	"memprobe/schema"
	"memprobe/trainer/decode"
	"memprobe/trainer/device"
	"memprobe/trainer/gemm"
)

// Tolerances of the check against the cpu device (--check cpu). The two
// devices compute the same float32 arithmetic in different orders (a
// blocked GEMM against cuBLAS, a serial sum against a block reduction,
// libm's exp against the GPU's ex2.approx): at the seed's and GPT-2's
// sizes that moves a probability by a few 1e-7 and a loss by a few 1e-6,
// so these bounds are ten times that and still catch any real error (a
// wrong row, transpose or offset moves them by 1e-2 or more).
const (
	CheckProbTol = 2e-5 // max |p_device − p_cpu| over every probability
	CheckLossTol = 1e-4 // max |loss_device − loss_cpu| / max(1, |loss_cpu|)
	// CheckTieTol: a token may differ only where the cpu's two most likely
	// tokens are within this much probability of each other.
	CheckTieTol = 1e-5
)

// CheckResult compares one mode's output on the device with the cpu
// device's on the same hidden states (package schema owns the record).
type CheckResult = schema.DecodeCheck

// checkSequences is how many sequences the check decodes on both devices:
// enough rows to cover every position of a batch, cheap on the cpu.
const checkSequences = 2

// checkMode decodes the first sequences in mode m on devName and on the
// cpu device, probabilities and losses copied back, and compares them.
// pinned decodes as the measurement did (Options.PinnedHost): the
// decoder's host buffers and the probabilities' buffer page-locked where
// the device has such memory, so the check covers the direct copies.
func checkMode(devName string, g gemm.Backend, m decode.Mode, V, C, T int, wte, hidden []float32, targets []uint16, B int, pinned bool) (CheckResult, error) {
	n := min(B, checkSequences)
	type out struct {
		tokens []uint16
		probs  []float32
		losses []float32
	}
	run := func(name string) ([]out, error) {
		dev, err := device.Open(name, g, ledger.New().Account(ledger.DeviceBuffers))
		if err != nil {
			return nil, err
		}
		defer dev.Close()
		d, err := decode.New(dev, m, V, C, T, wte, decode.PinnedHost(pinned))
		if err != nil {
			return nil, err
		}
		defer d.Close()
		var probs []float32 // where Decode writes (T, V): page-locked with the decoder's buffers
		if hm, ok := dev.(device.HostMemory); ok && d.PinnedHost() {
			if probs, err = hm.AllocHost("decodebench.check.probs", T*V); err != nil {
				return nil, err
			}
			defer hm.FreeHost(probs)
		}
		outs := make([]out, n)
		for b := range outs {
			o := out{make([]uint16, T), make([]float32, T*V), make([]float32, T)}
			p := o.probs
			if probs != nil {
				p = probs
			}
			if _, err := d.Decode(hidden[b*T*C:(b+1)*T*C], T, targets[b*T:(b+1)*T], o.tokens, p, o.losses); err != nil {
				return nil, fmt.Errorf("%s, sequence %d: %w", name, b, err)
			}
			copy(o.probs, p) // a no-op for a Go slice; out of the block before it is freed
			outs[b] = o
		}
		return outs, nil
	}
	got, err := run(devName)
	if err != nil {
		return CheckResult{}, err
	}
	want, err := run("cpu")
	if err != nil {
		return CheckResult{}, err
	}
	r := CheckResult{Against: "cpu", Sequences: n}
	for b := range got {
		for t := 0; t < T; t++ {
			gp, wp := got[b].probs[t*V:(t+1)*V], want[b].probs[t*V:(t+1)*V]
			for i := range gp {
				r.MaxProbDiff = math.Max(r.MaxProbDiff, math.Abs(float64(gp[i])-float64(wp[i])))
			}
			if d := math.Abs(float64(got[b].losses[t])-float64(want[b].losses[t])) / math.Max(1, math.Abs(float64(want[b].losses[t]))); d > r.MaxLossDiff || math.IsNaN(d) {
				r.MaxLossDiff = d
			}
			if got[b].tokens[t] != want[b].tokens[t] {
				r.TokensDiffer++
				if topGap(wp) < CheckTieTol {
					r.TokensNearTie++
				}
			}
		}
	}
	r.Pass = r.MaxProbDiff <= CheckProbTol && r.MaxLossDiff <= CheckLossTol && r.TokensDiffer == r.TokensNearTie
	r.ProbTol, r.LossTol, r.TieTol = CheckProbTol, CheckLossTol, CheckTieTol
	return r, nil
}

// topGap is the difference between the two largest values of p.
func topGap(p []float32) float64 {
	a, b := math.Inf(-1), math.Inf(-1)
	for _, v := range p {
		switch f := float64(v); {
		case f > a:
			a, b = f, a
		case f > b:
			b = f
		}
	}
	return a - b
}
