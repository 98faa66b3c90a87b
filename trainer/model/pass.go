package model

import (
	"math"
	"math/rand/v2"

	"memprobe/trainer/gemm"
	"memprobe/trainer/nn"
)

// Init fills p with GPT-2's initialisation from a seeded generator: weights
// N(0, 0.02), residual projections N(0, 0.02/sqrt(2L)), biases 0, LayerNorm
// gains 1. The same seed gives the same bits on every machine.
func Init(c Config, p *Params, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0x6d656d70726f6265)) // "memprobe"
	normal := func(t []float32, std float64) {
		for i := range t {
			t[i] = float32(rng.NormFloat64() * std)
		}
	}
	fill := func(t []float32, v float32) {
		for i := range t {
			t[i] = v
		}
	}
	proj := 0.02 / math.Sqrt(2*float64(c.Layers))
	normal(p.WTE, 0.02)
	normal(p.WPE, 0.02)
	fill(p.LN1W, 1)
	fill(p.LN1B, 0)
	normal(p.QKVW, 0.02)
	fill(p.QKVB, 0)
	normal(p.AttProjW, proj)
	fill(p.AttProjB, 0)
	fill(p.LN2W, 1)
	fill(p.LN2B, 0)
	normal(p.FCW, 0.02)
	fill(p.FCB, 0)
	normal(p.FCProjW, proj)
	fill(p.FCProjB, 0)
	fill(p.LNFW, 1)
	fill(p.LNFB, 0)
}

// Forward runs one sequence: inputs and targets are T=Context tokens each.
// It fills a and returns the sequence's mean loss.
func Forward(g gemm.Backend, c Config, p *Params, a *Acts, inputs, targets []uint16) float32 {
	ForwardBody(g, c, p, a, inputs)
	return ForwardHead(g, c, p, a, targets)
}

// ForwardBody runs the embedding and the blocks up to the final LayerNorm,
// leaving the hidden states in a.LNF (T, C).
func ForwardBody(g gemm.Backend, c Config, p *Params, a *Acts, inputs []uint16) {
	T, C, NH, FF := c.Context, c.Dim, c.Heads, c.FF
	TC := T * C
	nn.EncoderForward(a.Encoded, inputs, p.WTE, p.WPE, T, C)
	residual := a.Encoded
	for l := 0; l < c.Layers; l++ {
		ln1 := a.LN1[l*TC : (l+1)*TC]
		qkv := a.QKV[l*3*TC : (l+1)*3*TC]
		atty := a.Atty[l*TC : (l+1)*TC]
		att := a.Att[l*NH*T*T : (l+1)*NH*T*T]
		attproj := a.AttProj[l*TC : (l+1)*TC]
		res2 := a.Residual2[l*TC : (l+1)*TC]
		ln2 := a.LN2[l*TC : (l+1)*TC]
		fch := a.FCH[l*T*FF : (l+1)*T*FF]
		fchg := a.FCHGelu[l*T*FF : (l+1)*T*FF]
		fcproj := a.FCProj[l*TC : (l+1)*TC]
		res3 := a.Residual3[l*TC : (l+1)*TC]

		nn.LayerNormForward(ln1, a.LN1Mean[l*T:(l+1)*T], a.LN1Rstd[l*T:(l+1)*T], residual, p.LN1W[l*C:(l+1)*C], p.LN1B[l*C:(l+1)*C], T, C)
		nn.MatmulForward(g, qkv, ln1, p.QKVW[l*3*C*C:(l+1)*3*C*C], p.QKVB[l*3*C:(l+1)*3*C], T, C, 3*C)
		nn.AttentionForward(g, atty, att, qkv, T, C, NH)
		nn.MatmulForward(g, attproj, atty, p.AttProjW[l*C*C:(l+1)*C*C], p.AttProjB[l*C:(l+1)*C], T, C, C)
		nn.ResidualForward(res2, residual, attproj, TC)
		nn.LayerNormForward(ln2, a.LN2Mean[l*T:(l+1)*T], a.LN2Rstd[l*T:(l+1)*T], res2, p.LN2W[l*C:(l+1)*C], p.LN2B[l*C:(l+1)*C], T, C)
		nn.MatmulForward(g, fch, ln2, p.FCW[l*FF*C:(l+1)*FF*C], p.FCB[l*FF:(l+1)*FF], T, C, FF)
		nn.GeluForward(fchg, fch, T*FF)
		nn.MatmulForward(g, fcproj, fchg, p.FCProjW[l*C*FF:(l+1)*C*FF], p.FCProjB[l*C:(l+1)*C], T, FF, C)
		nn.ResidualForward(res3, res2, fcproj, TC)
		residual = res3
	}
	nn.LayerNormForward(a.LNF, a.LNFMean, a.LNFRstd, residual, p.LNFW, p.LNFB, T, C)
}

// ForwardHead runs the LM head (tied to wte) and the loss on a.LNF: logits,
// probabilities and per-position losses. It returns the sequence's mean
// loss. A device decoder (package decode) may replace it: what backward
// needs from the head is a.Probs.
func ForwardHead(g gemm.Backend, c Config, p *Params, a *Acts, targets []uint16) float32 {
	T, C, V := c.Context, c.Dim, c.Vocab
	nn.MatmulForward(g, a.Logits, a.LNF, p.WTE, nil, T, C, V)
	nn.SoftmaxCrossEntropyForward(a.Losses, a.Probs, a.Logits, targets, T, V)
	return MeanLoss(a.Losses)
}

// MeanLoss is the mean of losses, accumulated in float64 in position order
// so that it is deterministic.
func MeanLoss(losses []float32) float32 {
	var sum float64
	for _, l := range losses {
		sum += float64(l)
	}
	return float32(sum / float64(len(losses)))
}

// Turnstile orders the additions of each sequence's parameter gradients into
// the shared gradient buffer. Backward calls Enter(slot) before it adds into
// the tensors of a slot and Leave(slot) after; an implementation lets
// sequence i into a slot only after sequence i-1 has left it, so the shared
// gradient is summed in sequence order whatever the number of threads: the
// loss is then the same bit for bit at 1, 2 or 7 threads. Executors hold no
// gradient copy of their own (but for wte, see GradActs.DWTE).
type Turnstile interface {
	Enter(slot int)
	Leave(slot int)
}

// Slots: SlotLNF, then six per layer (LayerSlot), then SlotEncoder.
const (
	SlotLNF = 0

	slotFCProj = iota - 1
	slotFC
	slotLN2
	slotAttProj
	slotQKV
	slotLN1
	slotsPerLayer
)

// LayerSlot is the first slot of layer l.
func LayerSlot(l int) int { return 1 + l*slotsPerLayer }

// SlotEncoder is the last slot: wpe and the sequence's whole wte gradient.
func (c Config) SlotEncoder() int { return 1 + c.Layers*slotsPerLayer }

// NumSlots is the number of turnstile slots for c.
func (c Config) NumSlots() int { return c.SlotEncoder() + 1 }

// NoTurnstile is for a single sequence at a time (tests, one executor).
type NoTurnstile struct{}

func (NoTurnstile) Enter(int) {}
func (NoTurnstile) Leave(int) {}

// Backward accumulates one sequence's gradients into grads (through ts) given
// the activations Forward left in a. dloss is the weight of each position's
// loss in the step's loss: 1/(B*T).
//
// Only the parameter-gradient products run inside a turnstile slot; each
// layer's input gradient (dinp = dout · weight) is computed before, outside
// the slot, so a sequence holds a slot only for the additions the order
// matters for. Workspace tensors are overwritten by the kernel that first
// writes them (beta 0 products, the ...Into kernels), so nothing is cleared
// but the residual gradient.
func Backward(g gemm.Backend, c Config, p, grads *Params, a *Acts, ga *GradActs, inputs, targets []uint16, dloss float32, ts Turnstile) {
	T, C, NH, FF, V := c.Context, c.Dim, c.Heads, c.FF, c.Vocab
	TC := T * C
	nn.SoftmaxCrossEntropyBackwardInto(ga.DLogits, a.Probs, targets, dloss, T, V)
	// LM head, tied to wte: its weight gradient goes to this sequence's own
	// DWTE and joins the shared gradient at SlotEncoder.
	nn.MatmulBackwardInput(g, ga.DLN, ga.DLogits, p.WTE, T, C, V, 0)
	nn.MatmulBackwardWeight(g, ga.DWTE, nil, ga.DLogits, a.LNF, T, C, V, 0)

	last := a.Encoded
	if c.Layers > 0 {
		last = a.Residual3[(c.Layers-1)*TC : c.Layers*TC]
	}
	clear(ga.DResidual)
	ts.Enter(SlotLNF)
	nn.LayerNormBackward(ga.DResidual, grads.LNFW, grads.LNFB, ga.DLN, last, p.LNFW, a.LNFMean, a.LNFRstd, T, C)
	ts.Leave(SlotLNF)

	for l := c.Layers - 1; l >= 0; l-- {
		s := LayerSlot(l)
		residual := a.Encoded
		if l > 0 {
			residual = a.Residual3[(l-1)*TC : l*TC]
		}
		ln1 := a.LN1[l*TC : (l+1)*TC]
		qkv := a.QKV[l*3*TC : (l+1)*3*TC]
		atty := a.Atty[l*TC : (l+1)*TC]
		att := a.Att[l*NH*T*T : (l+1)*NH*T*T]
		res2 := a.Residual2[l*TC : (l+1)*TC]
		ln2 := a.LN2[l*TC : (l+1)*TC]
		fch := a.FCH[l*T*FF : (l+1)*T*FF]
		fchg := a.FCHGelu[l*T*FF : (l+1)*T*FF]

		// residual3 = residual2 + fcproj: DResidual is the gradient of both.
		nn.MatmulBackwardInput(g, ga.DFCHGelu, ga.DResidual, p.FCProjW[l*C*FF:(l+1)*C*FF], T, FF, C, 0)
		ts.Enter(s + slotFCProj)
		nn.MatmulBackwardWeight(g, grads.FCProjW[l*C*FF:(l+1)*C*FF], grads.FCProjB[l*C:(l+1)*C], ga.DResidual, fchg, T, FF, C, 1)
		ts.Leave(s + slotFCProj)
		nn.GeluBackwardInto(ga.DFCH, fch, ga.DFCHGelu, T*FF)
		nn.MatmulBackwardInput(g, ga.DLN, ga.DFCH, p.FCW[l*FF*C:(l+1)*FF*C], T, C, FF, 0)
		ts.Enter(s + slotFC)
		nn.MatmulBackwardWeight(g, grads.FCW[l*FF*C:(l+1)*FF*C], grads.FCB[l*FF:(l+1)*FF], ga.DFCH, ln2, T, C, FF, 1)
		ts.Leave(s + slotFC)
		ts.Enter(s + slotLN2)
		nn.LayerNormBackward(ga.DResidual, grads.LN2W[l*C:(l+1)*C], grads.LN2B[l*C:(l+1)*C], ga.DLN, res2, p.LN2W[l*C:(l+1)*C], a.LN2Mean[l*T:(l+1)*T], a.LN2Rstd[l*T:(l+1)*T], T, C)
		ts.Leave(s + slotLN2)

		// residual2 = residual + attproj: DResidual now is the gradient of both.
		nn.MatmulBackwardInput(g, ga.DAtty, ga.DResidual, p.AttProjW[l*C*C:(l+1)*C*C], T, C, C, 0)
		ts.Enter(s + slotAttProj)
		nn.MatmulBackwardWeight(g, grads.AttProjW[l*C*C:(l+1)*C*C], grads.AttProjB[l*C:(l+1)*C], ga.DResidual, atty, T, C, C, 1)
		ts.Leave(s + slotAttProj)
		nn.AttentionBackwardInto(g, ga.DQKV, ga.DAtt, ga.DAtty, qkv, att, T, C, NH)
		nn.MatmulBackwardInput(g, ga.DLN, ga.DQKV, p.QKVW[l*3*C*C:(l+1)*3*C*C], T, C, 3*C, 0)
		ts.Enter(s + slotQKV)
		nn.MatmulBackwardWeight(g, grads.QKVW[l*3*C*C:(l+1)*3*C*C], grads.QKVB[l*3*C:(l+1)*3*C], ga.DQKV, ln1, T, C, 3*C, 1)
		ts.Leave(s + slotQKV)
		ts.Enter(s + slotLN1)
		nn.LayerNormBackward(ga.DResidual, grads.LN1W[l*C:(l+1)*C], grads.LN1B[l*C:(l+1)*C], ga.DLN, residual, p.LN1W[l*C:(l+1)*C], a.LN1Mean[l*T:(l+1)*T], a.LN1Rstd[l*T:(l+1)*T], T, C)
		ts.Leave(s + slotLN1)
	}

	se := c.SlotEncoder()
	ts.Enter(se)
	nn.EncoderBackward(ga.DWTE, grads.WPE, ga.DResidual, inputs, T, C)
	nn.Accumulate(grads.WTE, ga.DWTE, len(ga.DWTE))
	ts.Leave(se)
}

// Sampler is the seeded generator of the uniforms SampleToken takes, a
// PCG held by value: rand.New(rand.NewPCG(...)) puts the PCG on the heap,
// a 16-byte object that the tiny allocator packs into a shared block or
// not depending on what ran before, so a step's allocation count would
// move between runs of one build. Its draws are rand.New(rand.NewPCG(seed,
// stream)).Float32()'s, bit for bit.
type Sampler struct{ pcg rand.PCG }

// NewSampler returns the sampler of seed and stream.
func NewSampler(seed, stream uint64) Sampler {
	var s Sampler
	s.pcg.Seed(seed, stream)
	return s
}

// Float32 is the next uniform in [0, 1), as rand.Rand.Float32 computes it.
func (s *Sampler) Float32() float32 {
	return float32(uint32(s.pcg.Uint64()>>32)<<8>>8) / (1 << 24)
}

// SampleStream is the PCG stream of generation's samplers ("sample"),
// shared by both engines so that they draw the same tokens.
const SampleStream = 0x73616d706c65

// SampleToken draws a token from probs (one position's softmax) given a
// uniform r in [0, 1): the first id whose cumulative probability exceeds r,
// or the last id when rounding leaves the sum below r.
func SampleToken(probs []float32, r float32) uint16 {
	var cum float32
	for i, p := range probs {
		cum += p
		if r < cum {
			return uint16(i)
		}
	}
	return uint16(len(probs) - 1)
}
