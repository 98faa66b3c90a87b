package tape

import (
	"fmt"

	"memprobe/trainer/gemm"
	"memprobe/trainer/model"
	"memprobe/trainer/nn"
)

// Options select the variants of the tape's ops.
type Options struct {
	// OneHotEmbedding makes the embedding keep a dense one-hot matrix of
	// the tokens (T, V), built in Forward from the allocator, and compute
	// its wte gradient as onehotᵀ · dout with one GEMM (V·T·C multiply-adds)
	// instead of a scatter-add of T rows: design note 004's embedding.
	OneHotEmbedding bool
}

// Indices of the parameter tensors in model.Params.Tensors() order.
const (
	tWTE = iota
	tWPE
	tLN1W
	tLN1B
	tQKVW
	tQKVB
	tAttProjW
	tAttProjB
	tLN2W
	tLN2B
	tFCW
	tFCB
	tFCProjW
	tFCProjB
	tLNFW
	tLNFB
)

// The turnstile slots of a layer's parameter tensors, offsets from
// model.LayerSlot(l): the order model.Backward enters them in.
const (
	slotFCProj = iota
	slotFC
	slotLN2
	slotAttProj
	slotQKV
	slotLN1
)

// pref names a parameter tensor or a slice of one (one layer's part).
type pref struct{ t, off, n int }

var noParam = pref{t: -1}

// of returns r's slice of p.
func (r pref) of(p *model.Params) []float32 {
	s := *p.Tensors()[r.t]
	return s[r.off : r.off+r.n : r.off+r.n]
}

// tensor is a value the graph computed and, once Backward reaches a node
// that reads it, the gradient of the loss with respect to it.
type tensor struct {
	data []float32
	grad []float32 // nil until the first gradient arrives
}

// node is one recorded op: its output, its tensor inputs (parameters are
// not tensors: they are read from the model and their gradients go to the
// caller's model.Params), the turnstile slot its parameter gradients are
// added under (-1: none) and its backward.
type node struct {
	op   string
	out  *tensor
	in   [2]*tensor
	slot int
	back func(gr *Graph)
}

type graphState int

const (
	forwarded graphState = iota
	backwarded
	released
)

// Graph is the tape of one sequence's forward pass. It is not safe for
// concurrent use; distinct graphs are independent.
type Graph struct {
	g       gemm.Backend
	c       model.Config
	p       *model.Params
	alloc   Allocator
	opts    Options
	inputs  []uint16
	targets []uint16

	nodes []node
	bufs  [][]float32 // every slice obtained from alloc, for Release
	bytes int64
	state graphState

	wte    *tensor // wte as a leaf: its gradient is this sequence's own (V, C), LM head + embedding
	probs  []float32
	losses []float32
	loss   float32

	arena      *Arena // alloc, when it is an arena
	arenaEpoch uint64

	// set during Backward, read by the nodes' backward funcs
	grads *model.Params
	dloss float32
}

// Forward runs one sequence through the model, recording every op on a new
// graph whose tensors all come from alloc. inputs and targets are
// c.Context tokens each and must stay unchanged until Backward returns. It
// returns the graph and the sequence's mean loss, the same bits as
// model.Forward's. It panics on a token out of range, as the kernels do.
func Forward(g gemm.Backend, c model.Config, p *model.Params, inputs, targets []uint16, alloc Allocator, o Options) (*Graph, float32) {
	T, C, L, FF, V := c.Context, c.Dim, c.Layers, c.FF, c.Vocab
	if len(inputs) < T || len(targets) < T {
		panic(fmt.Sprintf("tape: %d inputs and %d targets for a context of %d tokens", len(inputs), len(targets), T))
	}
	gr := &Graph{
		g: g, c: c, p: p, alloc: alloc, opts: o,
		inputs: inputs[:T:T], targets: targets[:T:T],
		nodes: make([]node, 0, 4+10*L),
		bufs:  make([][]float32, 0, 12+28*L), // forward 16 and backward 11 per layer
		wte:   &tensor{data: p.WTE},
	}
	if a, ok := alloc.(*Arena); ok {
		gr.arena, gr.arenaEpoch = a, a.resets()
	}
	x := gr.embedding()
	for l := 0; l < L; l++ {
		s := model.LayerSlot(l)
		lc := pref{0, l * C, C}
		ln1 := gr.layerNorm(x, lc.at(tLN1W), lc.at(tLN1B), s+slotLN1)
		qkv := gr.matmul(ln1, pref{tQKVW, l * 3 * C * C, 3 * C * C}, pref{tQKVB, l * 3 * C, 3 * C}, C, 3*C, s+slotQKV)
		atty := gr.attention(qkv)
		attproj := gr.matmul(atty, pref{tAttProjW, l * C * C, C * C}, lc.at(tAttProjB), C, C, s+slotAttProj)
		res2 := gr.residual(x, attproj)
		ln2 := gr.layerNorm(res2, lc.at(tLN2W), lc.at(tLN2B), s+slotLN2)
		fch := gr.matmul(ln2, pref{tFCW, l * FF * C, FF * C}, pref{tFCB, l * FF, FF}, C, FF, s+slotFC)
		fchg := gr.gelu(fch)
		fcproj := gr.matmul(fchg, pref{tFCProjW, l * C * FF, C * FF}, lc.at(tFCProjB), FF, C, s+slotFCProj)
		x = gr.residual(res2, fcproj)
	}
	lnf := gr.layerNorm(x, pref{tLNFW, 0, C}, pref{tLNFB, 0, C}, model.SlotLNF)
	logits := gr.matmul(lnf, pref{tWTE, 0, V * C}, noParam, C, V, -1)
	gr.crossEntropy(logits)
	gr.loss = model.MeanLoss(gr.losses)
	return gr, gr.loss
}

// at is r with its tensor index set: the same layer slice of another tensor.
func (r pref) at(t int) pref { r.t = t; return r }

// floats takes n floats from the allocator and remembers them.
func (gr *Graph) floats(n int) []float32 {
	s := gr.alloc.Float32s(n)
	if len(s) != n {
		panic(fmt.Sprintf("tape: allocator returned %d floats for a request of %d", len(s), n))
	}
	gr.bufs = append(gr.bufs, s)
	gr.bytes += int64(n) * 4
	return s
}

func (gr *Graph) newTensor(n int) *tensor { return &tensor{data: gr.floats(n)} }

// gradOf returns t's gradient, taking a zeroed buffer the first time.
func (gr *Graph) gradOf(t *tensor) []float32 {
	if t.grad == nil {
		t.grad = gr.floats(len(t.data))
	}
	return t.grad
}

// passGrad adds d into t's gradient; the first gradient is copied, which is
// the same bits as adding it to zero (and keeps the sign of a zero).
func (gr *Graph) passGrad(t *tensor, d []float32) {
	if t.grad == nil {
		t.grad = gr.floats(len(t.data))
		copy(t.grad, d)
		return
	}
	g := t.grad[:len(d)]
	for i, v := range d {
		g[i] += v
	}
}

func (gr *Graph) record(n node) { gr.nodes = append(gr.nodes, n) }

// paramGrad is where r's gradient goes: the caller's grads, except for wte,
// whose gradient collects in the graph's own leaf buffer (the LM head and
// the embedding both add to it) and joins grads.WTE at model's SlotEncoder.
func (gr *Graph) paramGrad(r pref) []float32 {
	if r.t < 0 {
		return nil
	}
	if r.t == tWTE {
		return gr.gradOf(gr.wte)[r.off : r.off+r.n]
	}
	return r.of(gr.grads)
}

func (gr *Graph) param(r pref) []float32 {
	if r.t < 0 {
		return nil
	}
	return r.of(gr.p)
}

// embedding: out[t] = wte[inputs[t]] + wpe[t]. Its backward is the last node
// Backward runs, so it also adds the wte leaf gradient into grads.WTE, under
// the same slot, after its own contribution, as model.Backward does.
func (gr *Graph) embedding() *tensor {
	T, C, V := gr.c.Context, gr.c.Dim, gr.c.Vocab
	out := gr.newTensor(T * C)
	nn.EncoderForward(out.data, gr.inputs, gr.p.WTE, gr.p.WPE, T, C)
	var onehot []float32 // (T, V)
	if gr.opts.OneHotEmbedding {
		onehot = gr.floats(T * V)
		for t, tok := range gr.inputs {
			onehot[t*V+int(tok)] = 1
		}
	}
	gr.record(node{op: "embedding", out: out, slot: gr.c.SlotEncoder(), back: func(gr *Graph) {
		dout := gr.gradOf(out)
		dwte := gr.gradOf(gr.wte)
		if onehot != nil {
			// dwte += onehotᵀ · dout: (V, T)·(T, C).
			gr.g.Sgemm(true, false, V, C, T, 1, onehot, V, dout, C, 1, dwte, C)
			dwpe := gr.grads.WPE[:T*C]
			for i, v := range dout[:T*C] {
				dwpe[i] += v
			}
		} else {
			nn.EncoderBackward(dwte, gr.grads.WPE, dout, gr.inputs, T, C)
		}
		w := gr.grads.WTE[:len(dwte)]
		for i, v := range dwte {
			w[i] += v
		}
	}})
	return out
}

func (gr *Graph) layerNorm(x *tensor, w, b pref, slot int) *tensor {
	T, C := gr.c.Context, gr.c.Dim
	out := gr.newTensor(T * C)
	mean, rstd := gr.floats(T), gr.floats(T)
	nn.LayerNormForward(out.data, mean, rstd, x.data, gr.param(w), gr.param(b), T, C)
	gr.record(node{op: "layernorm", out: out, in: [2]*tensor{x}, slot: slot, back: func(gr *Graph) {
		nn.LayerNormBackward(gr.gradOf(x), gr.paramGrad(w), gr.paramGrad(b), gr.gradOf(out), x.data, gr.param(w), mean, rstd, T, C)
	}})
	return out
}

// matmul: out = x · wᵀ + b, x (T, IC), w (OC, IC), b (OC) or noParam.
func (gr *Graph) matmul(x *tensor, w, b pref, IC, OC, slot int) *tensor {
	T := gr.c.Context
	out := gr.newTensor(T * OC)
	nn.MatmulForward(gr.g, out.data, x.data, gr.param(w), gr.param(b), T, IC, OC)
	gr.record(node{op: "matmul", out: out, in: [2]*tensor{x}, slot: slot, back: func(gr *Graph) {
		nn.MatmulBackward(gr.g, gr.gradOf(x), gr.paramGrad(w), gr.paramGrad(b), gr.gradOf(out), x.data, gr.param(w), T, IC, OC)
	}})
	return out
}

func (gr *Graph) attention(qkv *tensor) *tensor {
	T, C, NH := gr.c.Context, gr.c.Dim, gr.c.Heads
	out := gr.newTensor(T * C)
	att := gr.floats(NH * T * T)
	nn.AttentionForward(gr.g, out.data, att, qkv.data, T, C, NH)
	gr.record(node{op: "attention", out: out, in: [2]*tensor{qkv}, slot: -1, back: func(gr *Graph) {
		scratch := gr.floats(T * T)
		nn.AttentionBackward(gr.g, gr.gradOf(qkv), scratch, gr.gradOf(out), qkv.data, att, T, C, NH)
	}})
	return out
}

func (gr *Graph) gelu(x *tensor) *tensor {
	n := len(x.data)
	out := gr.newTensor(n)
	nn.GeluForward(out.data, x.data, n)
	gr.record(node{op: "gelu", out: out, in: [2]*tensor{x}, slot: -1, back: func(gr *Graph) {
		nn.GeluBackward(gr.gradOf(x), x.data, gr.gradOf(out), n)
	}})
	return out
}

func (gr *Graph) residual(a, b *tensor) *tensor {
	n := len(a.data)
	out := gr.newTensor(n)
	nn.ResidualForward(out.data, a.data, b.data, n)
	gr.record(node{op: "residual", out: out, in: [2]*tensor{a, b}, slot: -1, back: func(gr *Graph) {
		d := gr.gradOf(out)
		gr.passGrad(a, d)
		gr.passGrad(b, d)
	}})
	return out
}

// crossEntropy: probs = softmax(logits), losses[t] = -ln probs[t, target].
// Its gradient source is dloss per position (Backward's argument).
func (gr *Graph) crossEntropy(logits *tensor) {
	T, V := gr.c.Context, gr.c.Vocab
	gr.probs = gr.floats(T * V)
	losses := gr.newTensor(T)
	gr.losses = losses.data
	nn.SoftmaxCrossEntropyForward(losses.data, gr.probs, logits.data, gr.targets, T, V)
	gr.record(node{op: "crossentropy", out: losses, in: [2]*tensor{logits}, slot: -1, back: func(gr *Graph) {
		nn.SoftmaxCrossEntropyBackward(gr.gradOf(logits), gr.probs, gr.targets, gr.dloss, T, V)
	}})
}

// Backward walks the tape in reverse and accumulates the sequence's
// parameter gradients into grads, each node's additions under its
// turnstile slot (model.SlotLNF, model.LayerSlot(l)+k, SlotEncoder for wpe
// and the sequence's whole wte gradient), in the same order and with the
// same kernels as model.Backward, so that the sums are the same bits.
// dloss is the weight of each position's loss: 1/(B*T) in the trainer.
// Gradient tensors and backward scratch come from the graph's allocator.
// Backward may be called once; it panics on a released graph or one whose
// arena was reset since Forward.
func (gr *Graph) Backward(grads *model.Params, dloss float32, ts model.Turnstile) {
	switch gr.state {
	case backwarded:
		panic("tape: Backward called twice on one graph")
	case released:
		panic("tape: Backward on a released graph")
	}
	if gr.arena != nil && gr.arena.resets() != gr.arenaEpoch {
		panic("tape: Backward on a graph whose arena was reset after its Forward (its tensors were handed out again)")
	}
	gr.state = backwarded
	gr.grads, gr.dloss = grads, dloss
	for i := len(gr.nodes) - 1; i >= 0; i-- {
		n := &gr.nodes[i]
		if n.slot >= 0 {
			ts.Enter(n.slot)
			n.back(gr)
			ts.Leave(n.slot)
		} else {
			n.back(gr)
		}
	}
	gr.grads = nil
}

// Release drops the graph's references to its tensors and, for an allocator
// that implements Freer (Heap), frees each of them. An arena's memory comes
// back only when the arena is reset. The graph is unusable afterwards;
// releasing it again does nothing.
func (gr *Graph) Release() {
	if gr.state == released {
		return
	}
	if f, ok := gr.alloc.(Freer); ok {
		for _, s := range gr.bufs {
			f.Free(s)
		}
	}
	clear(gr.nodes)
	clear(gr.bufs)
	gr.nodes, gr.bufs, gr.bytes = nil, nil, 0
	gr.wte, gr.probs, gr.losses = nil, nil, nil
	gr.p, gr.alloc, gr.arena = nil, nil, nil
	gr.inputs, gr.targets = nil, nil
	gr.state = released
}

// Nodes is the number of ops recorded: 1 + 10·L + 3 (embedding; per layer
// layernorm, matmul, attention, matmul, residual, layernorm, matmul, gelu,
// matmul, residual; final layernorm, LM head matmul, cross-entropy).
func (gr *Graph) Nodes() int { return len(gr.nodes) }

// Ops lists the recorded ops in forward order.
func (gr *Graph) Ops() []string {
	ops := make([]string, len(gr.nodes))
	for i, n := range gr.nodes {
		ops[i] = n.op
	}
	return ops
}

// Bytes is the bytes the graph holds from its allocator: forward tensors
// and caches, and after Backward also the gradients and scratch. It is 0
// after Release.
func (gr *Graph) Bytes() int64 { return gr.bytes }

// Loss is the sequence's mean loss, as Forward returned it.
func (gr *Graph) Loss() float32 { return gr.loss }

// Probs is the softmax output (T, V), owned by the graph: valid until
// Release, or until its arena is reset.
func (gr *Graph) Probs() []float32 { return gr.probs }
