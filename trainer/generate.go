package trainer

// Generate generates n tokens after the dataset's first token, sampling each
// from the model's softmax (temperature 1) with a seeded generator, through
// the engine (both engines give the same tokens). It must not run
// concurrently with Step.
func (t *Trainer) Generate(n int, seed uint64) []uint16 {
	return t.engine.generate(t.data.Tokens[:1], n, seed)
}
