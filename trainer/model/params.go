package model

// NumParamTensors is the number of named parameter tensors (llm.c's 16).
const NumParamTensors = 16

// ParamNames names the tensors in layout order.
var ParamNames = [NumParamTensors]string{
	"wte", "wpe", "ln1w", "ln1b", "qkvw", "qkvb", "attprojw", "attprojb",
	"ln2w", "ln2b", "fcw", "fcb", "fcprojw", "fcprojb", "lnfw", "lnfb",
}

// ParamSizes returns the element count of each parameter tensor, in layout
// order. The LM head is tied to wte, so it has no tensor of its own.
func (c Config) ParamSizes() [NumParamTensors]int {
	V, C, L, FF, maxT := c.Vocab, c.Dim, c.Layers, c.FF, c.Context
	return [NumParamTensors]int{
		V * C,         // wte (V, C)
		maxT * C,      // wpe (maxT, C)
		L * C,         // ln1w (L, C)
		L * C,         // ln1b (L, C)
		L * 3 * C * C, // qkvw (L, 3C, C)
		L * 3 * C,     // qkvb (L, 3C)
		L * C * C,     // attprojw (L, C, C)
		L * C,         // attprojb (L, C)
		L * C,         // ln2w (L, C)
		L * C,         // ln2b (L, C)
		L * FF * C,    // fcw (L, FF, C)
		L * FF,        // fcb (L, FF)
		L * C * FF,    // fcprojw (L, C, FF)
		L * C,         // fcprojb (L, C)
		C,             // lnfw (C)
		C,             // lnfb (C)
	}
}

// NumParams is the total parameter count: 4,973,568 for the seed preset.
func (c Config) NumParams() int {
	n := 0
	for _, s := range c.ParamSizes() {
		n += s
	}
	return n
}

// Params is a set of named views into one backing slice. The same type holds
// the parameters, their gradients and the two Adam moments.
type Params struct {
	Memory []float32 // the backing slice, NumParams() floats

	WTE      []float32 // (V, C) token embedding, also the LM head
	WPE      []float32 // (maxT, C) position embedding
	LN1W     []float32 // (L, C)
	LN1B     []float32 // (L, C)
	QKVW     []float32 // (L, 3C, C)
	QKVB     []float32 // (L, 3C)
	AttProjW []float32 // (L, C, C)
	AttProjB []float32 // (L, C)
	LN2W     []float32 // (L, C)
	LN2B     []float32 // (L, C)
	FCW      []float32 // (L, FF, C)
	FCB      []float32 // (L, FF)
	FCProjW  []float32 // (L, C, FF)
	FCProjB  []float32 // (L, C)
	LNFW     []float32 // (C)
	LNFB     []float32 // (C)
}

// NewParams cuts mem (exactly NumParams() floats) into named tensors. It
// panics on a size mismatch: a shape change is a bug, not something to
// reallocate silently.
func NewParams(c Config, mem []float32) *Params {
	if len(mem) != c.NumParams() {
		panic("model: parameter memory has the wrong size")
	}
	p := &Params{Memory: mem}
	ptrs := p.Tensors()
	off := 0
	for i, n := range c.ParamSizes() {
		*ptrs[i] = mem[off : off+n : off+n]
		off += n
	}
	return p
}

// Tensors returns pointers to the named views in layout order.
func (p *Params) Tensors() [NumParamTensors]*[]float32 {
	return [NumParamTensors]*[]float32{
		&p.WTE, &p.WPE, &p.LN1W, &p.LN1B, &p.QKVW, &p.QKVB, &p.AttProjW, &p.AttProjB,
		&p.LN2W, &p.LN2B, &p.FCW, &p.FCB, &p.FCProjW, &p.FCProjB, &p.LNFW, &p.LNFB,
	}
}
