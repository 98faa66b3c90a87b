package data

import (
	"fmt"
	"math"
)

// BytesPerToken is how many bytes of text one synthetic token stands for:
// "synthetic:SIZE" yields SIZE/BytesPerToken tokens. The design notes' 24 MB
// text tokenized to 4.8 M tokens, so synthetic:24MB gives 4,800,000 tokens.
const BytesPerToken = 5

// MaxVocab is the largest vocabulary a Dataset can have: token ids are uint16
// and the trainer keeps 65535 as the cap.
const MaxVocab = 65535

// Shape of the synthetic language. The stream is a Markov chain over a
// Zipf-ranked vocabulary: from the current token it usually moves to one of
// that token's few preferred successors, sometimes emits a phrase from a bank
// of repeated phrases, and rarely jumps to a Zipf-random token. The numbers
// were tuned so that, at vocab 788, H(next | current) is about 1.6 nats while
// the unigram entropy is about 5.3 nats (see TestSyntheticEntropy): a model
// that learns bigrams drops well below its ln(V) = 6.67 starting loss.
const (
	zipfExponent  = 0.8 // rank weights: p(rank r) ∝ 1/(r+1)^s
	numSuccessors = 4   // preferred successors per token
	minPhrase     = 3   // phrase lengths are uniform in [minPhrase, maxPhrase]
	maxPhrase     = 12
	maxPhrases    = 4096 // phrase bank size: 4 per vocabulary entry, capped
)

// Per-step probabilities from the current token. The successor weights fall
// off geometrically; the remainder goes to a phrase or a random jump.
var (
	successorProb = [numSuccessors]float64{0.52, 0.22, 0.11, 0.05}
	phraseProb    = 0.06
	// jump probability = 1 - sum(successorProb) - phraseProb = 0.04
)

// Synthetic returns nTokens tokens of a deterministic, learnable synthetic
// language over ids [0, vocab), the same for the same arguments on every
// platform (the generator is its own splitmix64, not math/rand's global
// state).
//
// If nTokens >= vocab, exactly vocab distinct ids appear: the stream opens with
// every id once, in a seeded random order. The rest has Zipf-like unigram
// frequencies, a strong successor (bigram) structure and a bank of repeated
// phrases of 3-12 tokens drawn with Zipf frequency, so a small GPT's loss falls
// visibly within a few hundred steps.
//
// Synthetic panics if vocab is outside [1, MaxVocab] or nTokens is negative;
// Load checks both and returns an error instead.
func Synthetic(nTokens int, vocab int, seed uint64) []uint16 {
	if vocab < 1 || vocab > MaxVocab {
		panic(fmt.Sprintf("data.Synthetic: vocab %d outside [1, %d]", vocab, MaxVocab))
	}
	if nTokens < 0 {
		panic(fmt.Sprintf("data.Synthetic: negative token count %d", nTokens))
	}
	out := make([]uint16, nTokens)
	g := newGrammar(vocab, seed)

	// Preamble: every id once, so the distinct count is exactly vocab.
	n := copy(out, g.rng.perm(vocab))
	if n == 0 {
		return out
	}

	// Cumulative thresholds on a 32-bit uniform for the per-step choice.
	var thr [numSuccessors + 1]uint32
	acc := 0.0
	for i, p := range successorProb {
		acc += p
		thr[i] = uint32(acc * (1 << 32))
	}
	thr[numSuccessors] = uint32((acc + phraseProb) * (1 << 32))

	cur := out[n-1]
	for n < nTokens {
		u := uint32(g.rng.next() >> 32)
		switch {
		case u < thr[numSuccessors-1]:
			k := 0
			for u >= thr[k] {
				k++
			}
			cur = g.succ[int(cur)*numSuccessors+k]
			out[n] = cur
			n++
		case u < thr[numSuccessors]:
			p := g.phrases.sample(&g.rng)
			n += copy(out[n:], g.phraseTokens[g.phraseStart[p]:g.phraseStart[p+1]])
			cur = out[n-1]
		default:
			cur = g.ids[g.unigram.sample(&g.rng)]
			out[n] = cur
			n++
		}
	}
	return out
}

// grammar is the random structure behind one (vocab, seed) pair.
type grammar struct {
	rng          splitmix64
	ids          []uint16 // ids[r] is the token of Zipf rank r
	unigram      alias    // over ranks
	succ         []uint16 // (vocab, numSuccessors) preferred successors of each token
	phrases      alias    // over phrase indices, Zipf
	phraseStart  []int    // (numPhrases+1) offsets into phraseTokens
	phraseTokens []uint16
}

func newGrammar(vocab int, seed uint64) *grammar {
	g := &grammar{rng: splitmix64(seed)}
	g.ids = g.rng.perm(vocab)
	g.unigram = newAlias(zipfWeights(vocab))

	// Preferred successors: distinct Zipf-drawn tokens where the vocabulary
	// allows, so frequent tokens are also frequent successors.
	g.succ = make([]uint16, vocab*numSuccessors)
	for t := range vocab {
		s := g.succ[t*numSuccessors : (t+1)*numSuccessors]
		for k := range s {
			var c uint16
			for try := 0; ; try++ {
				c = g.ids[g.unigram.sample(&g.rng)]
				if try >= 16 || !contains(s[:k], c) {
					break
				}
			}
			s[k] = c
		}
	}

	// Phrase bank: a Zipf-drawn first token, then a walk along preferred
	// successors, so phrases agree with the bigram structure and add
	// longer-range, exactly repeated context.
	numPhrases := min(4*vocab, maxPhrases)
	g.phrases = newAlias(zipfWeights(numPhrases))
	g.phraseStart = make([]int, numPhrases+1)
	for p := range numPhrases {
		length := minPhrase + int(g.rng.below(maxPhrase-minPhrase+1))
		t := g.ids[g.unigram.sample(&g.rng)]
		for range length {
			g.phraseTokens = append(g.phraseTokens, t)
			t = g.succ[int(t)*numSuccessors+int(g.rng.below(numSuccessors))]
		}
		g.phraseStart[p+1] = len(g.phraseTokens)
	}
	return g
}

func contains(s []uint16, v uint16) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// zipfWeights returns n weights proportional to 1/(r+1)^zipfExponent.
func zipfWeights(n int) []float64 {
	w := make([]float64, n)
	for r := range w {
		w[r] = math.Pow(float64(r+1), -zipfExponent)
	}
	return w
}

// splitmix64 is a small, fast, seedable generator (Steele, Lea and Flood,
// 2014). It is owned by one Synthetic call, so output does not depend on
// other users of a shared source.
type splitmix64 uint64

func (s *splitmix64) next() uint64 {
	*s += 0x9e3779b97f4a7c15
	z := uint64(*s)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// below returns a uniform integer in [0, n) for n <= 2^32 (multiply-shift;
// the bias is below n/2^32, irrelevant here).
func (s *splitmix64) below(n int) uint64 {
	return (s.next() >> 32) * uint64(n) >> 32
}

// perm returns a random permutation of [0, n) as uint16 (Fisher-Yates).
func (s *splitmix64) perm(n int) []uint16 {
	p := make([]uint16, n)
	for i := range p {
		p[i] = uint16(i)
	}
	for i := n - 1; i > 0; i-- {
		j := s.below(i + 1)
		p[i], p[j] = p[j], p[i]
	}
	return p
}

// alias samples an index with probability proportional to fixed weights in
// O(1) with one random draw (Vose's alias method).
type alias struct {
	thr   []uint32 // keep index i if the 32-bit uniform is below thr[i]
	other []uint32 // otherwise take other[i]
}

func newAlias(w []float64) alias {
	n := len(w)
	sum := 0.0
	for _, x := range w {
		sum += x
	}
	scaled := make([]float64, n)
	var small, large []int
	for i, x := range w {
		scaled[i] = x * float64(n) / sum
		if scaled[i] < 1 {
			small = append(small, i)
		} else {
			large = append(large, i)
		}
	}
	a := alias{thr: make([]uint32, n), other: make([]uint32, n)}
	for len(small) > 0 && len(large) > 0 {
		s, l := small[len(small)-1], large[len(large)-1]
		small = small[:len(small)-1]
		a.thr[s] = uint32(scaled[s] * (1 << 32))
		a.other[s] = uint32(l)
		scaled[l] -= 1 - scaled[s]
		if scaled[l] < 1 {
			large = large[:len(large)-1]
			small = append(small, l)
		}
	}
	// What remains has probability 1 up to rounding: always keep it.
	for _, i := range append(small, large...) {
		a.thr[i] = math.MaxUint32
		a.other[i] = uint32(i)
	}
	return a
}

func (a *alias) sample(s *splitmix64) int {
	r := s.next()
	i := (r & 0xffffffff) * uint64(len(a.thr)) >> 32
	if uint32(r>>32) < a.thr[i] {
		return int(i)
	}
	return int(a.other[i])
}
