package model

// Acts holds the forward activations of one sequence: what backward needs.
// It is an executor's workspace; an executor runs one sequence at a time, so
// the trainer holds (executors × ActsSize) floats however many logical
// workers it has.
type Acts struct {
	Memory []float32

	Encoded   []float32 // (T, C)
	LN1       []float32 // (L, T, C)
	LN1Mean   []float32 // (L, T)
	LN1Rstd   []float32 // (L, T)
	QKV       []float32 // (L, T, 3C)
	Atty      []float32 // (L, T, C)
	Att       []float32 // (L, NH, T, T) causal softmax; llm.c's preatt is computed in place
	AttProj   []float32 // (L, T, C)
	Residual2 []float32 // (L, T, C)
	LN2       []float32 // (L, T, C)
	LN2Mean   []float32 // (L, T)
	LN2Rstd   []float32 // (L, T)
	FCH       []float32 // (L, T, FF)
	FCHGelu   []float32 // (L, T, FF)
	FCProj    []float32 // (L, T, C)
	Residual3 []float32 // (L, T, C)
	LNF       []float32 // (T, C)
	LNFMean   []float32 // (T)
	LNFRstd   []float32 // (T)
	Logits    []float32 // (T, V)
	Probs     []float32 // (T, V)
	Losses    []float32 // (T)
}

// actSizes is an array, not a slice, so that asking a size allocates
// nothing.
func (c Config) actSizes() [22]int {
	T, C, L, NH, FF, V := c.Context, c.Dim, c.Layers, c.Heads, c.FF, c.Vocab
	return [22]int{
		T * C, L * T * C, L * T, L * T, L * T * 3 * C, L * T * C, L * NH * T * T,
		L * T * C, L * T * C, L * T * C, L * T, L * T, L * T * FF, L * T * FF,
		L * T * C, L * T * C, T * C, T, T, T * V, T * V, T,
	}
}

// ActsSize is the number of floats one sequence's activations take
// (4,596,096 for the seed preset: 18.4 MB).
func (c Config) ActsSize() int {
	n := 0
	for _, s := range c.actSizes() {
		n += s
	}
	return n
}

// NewActs cuts mem (exactly ActsSize() floats) into named tensors.
func NewActs(c Config, mem []float32) *Acts {
	if len(mem) != c.ActsSize() {
		panic("model: activation memory has the wrong size")
	}
	a := &Acts{Memory: mem}
	ptrs := []*[]float32{
		&a.Encoded, &a.LN1, &a.LN1Mean, &a.LN1Rstd, &a.QKV, &a.Atty, &a.Att,
		&a.AttProj, &a.Residual2, &a.LN2, &a.LN2Mean, &a.LN2Rstd, &a.FCH, &a.FCHGelu,
		&a.FCProj, &a.Residual3, &a.LNF, &a.LNFMean, &a.LNFRstd, &a.Logits, &a.Probs, &a.Losses,
	}
	off := 0
	for i, n := range c.actSizes() {
		*ptrs[i] = mem[off : off+n : off+n]
		off += n
	}
	return a
}

// GradActs is the backward workspace of one sequence. Unlike llm.c, which
// keeps a gradient for every activation, backward here walks the layers in
// reverse and needs only the gradient of the residual stream plus one
// layer's temporaries at a time, so this is about a sixth of Acts (777,728 floats, 3.1 MB, for the seed
// preset, a quarter of it the per-sequence wte gradient).
type GradActs struct {
	Memory []float32

	DResidual []float32 // (T, C) gradient flowing back through the residual stream
	DLN       []float32 // (T, C) gradient of a LayerNorm output (ln1, ln2 or lnf)
	DAtty     []float32 // (T, C)
	DQKV      []float32 // (T, 3C)
	DFCH      []float32 // (T, FF)
	DFCHGelu  []float32 // (T, FF)
	DAtt      []float32 // (T, T) one head's attention gradient (attention backward scratch)
	DLogits   []float32 // (T, V)
	DWTE      []float32 // (V, C) this sequence's wte gradient (LM head + embedding), added to the shared gradient in sequence order
}

func (c Config) gradActSizes() []int {
	T, C, FF, V := c.Context, c.Dim, c.FF, c.Vocab
	return []int{T * C, T * C, T * C, T * 3 * C, T * FF, T * FF, T * T, T * V, V * C}
}

// GradActsSize is the number of floats one executor's backward workspace takes.
func (c Config) GradActsSize() int {
	n := 0
	for _, s := range c.gradActSizes() {
		n += s
	}
	return n
}

// NewGradActs cuts mem (exactly GradActsSize() floats) into named tensors.
func NewGradActs(c Config, mem []float32) *GradActs {
	if len(mem) != c.GradActsSize() {
		panic("model: activation-gradient memory has the wrong size")
	}
	g := &GradActs{Memory: mem}
	ptrs := []*[]float32{&g.DResidual, &g.DLN, &g.DAtty, &g.DQKV, &g.DFCH, &g.DFCHGelu, &g.DAtt, &g.DLogits, &g.DWTE}
	off := 0
	for i, n := range c.gradActSizes() {
		*ptrs[i] = mem[off : off+n : off+n]
		off += n
	}
	return g
}
