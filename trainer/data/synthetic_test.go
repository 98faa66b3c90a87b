package data

import (
	"math"
	"slices"
	"testing"
)

func distinct(tokens []uint16) int {
	var seen [1 << 16]bool
	n := 0
	for _, t := range tokens {
		if !seen[t] {
			seen[t] = true
			n++
		}
	}
	return n
}

func TestSyntheticDeterministic(t *testing.T) {
	a := Synthetic(100_000, 788, 1)
	b := Synthetic(100_000, 788, 1)
	if !slices.Equal(a, b) {
		t.Fatal("Synthetic(100000, 788, 1) differs between two calls")
	}
	c := Synthetic(100_000, 788, 2)
	same := 0
	for i := range a {
		if a[i] == c[i] {
			same++
		}
	}
	// Unrelated streams agree at roughly sum(p_i^2) of positions, a few percent.
	if same > len(a)/5 {
		t.Errorf("seeds 1 and 2 agree at %d of %d positions; want different streams", same, len(a))
	}
	// A prefix is a prefix: the stream does not depend on its length.
	if short := Synthetic(5000, 788, 1); !slices.Equal(short, a[:5000]) {
		t.Error("Synthetic(5000, 788, 1) is not a prefix of Synthetic(100000, 788, 1)")
	}
}

func TestSyntheticVocabulary(t *testing.T) {
	for _, tc := range []struct{ n, vocab int }{
		{200_000, 788}, {788, 788}, {1000, 1}, {5000, 2}, {50_000, 4096}, {70_000, MaxVocab},
	} {
		s := Synthetic(tc.n, tc.vocab, 7)
		if len(s) != tc.n {
			t.Errorf("Synthetic(%d, %d): %d tokens", tc.n, tc.vocab, len(s))
		}
		if got := distinct(s); got != tc.vocab {
			t.Errorf("Synthetic(%d, %d): %d distinct ids, want %d", tc.n, tc.vocab, got, tc.vocab)
		}
		for i, id := range s {
			if int(id) >= tc.vocab {
				t.Fatalf("Synthetic(%d, %d)[%d] = %d, out of range", tc.n, tc.vocab, i, id)
			}
		}
	}
	// Fewer tokens than ids: all distinct, none out of range.
	if s := Synthetic(100, 788, 1); distinct(s) != 100 {
		t.Errorf("Synthetic(100, 788): %d distinct ids, want 100", distinct(s))
	}
	if s := Synthetic(0, 788, 1); len(s) != 0 {
		t.Errorf("Synthetic(0, 788): %d tokens", len(s))
	}
}

func TestSyntheticPanics(t *testing.T) {
	for _, tc := range []struct{ n, vocab int }{{10, 0}, {10, MaxVocab + 1}, {-1, 10}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Synthetic(%d, %d) did not panic", tc.n, tc.vocab)
				}
			}()
			Synthetic(tc.n, tc.vocab, 1)
		}()
	}
}

// TestSyntheticEntropy checks the stream is learnable: knowing the current
// token removes most of the uncertainty about the next one.
func TestSyntheticEntropy(t *testing.T) {
	const vocab = 788
	for seed := uint64(1); seed <= 3; seed++ {
		uni, cond := Entropies(Synthetic(200_000, vocab, seed))
		t.Logf("seed %d: unigram entropy %.3f nats, H(next|current) %.3f nats, ln(V) %.3f", seed, uni, cond, math.Log(vocab))
		if uni < 4.5 {
			t.Errorf("seed %d: unigram entropy %.3f nats, want >= 4.5", seed, uni)
		}
		if cond > 2.5 {
			t.Errorf("seed %d: conditional entropy %.3f nats, want <= 2.5", seed, cond)
		}
	}
}

func TestEntropiesReference(t *testing.T) {
	// Uniform over 4 symbols in a fixed cycle: H = ln 4, H(next|cur) = 0.
	var s []uint16
	for range 1000 {
		s = append(s, 0, 1, 2, 3)
	}
	uni, cond := Entropies(s)
	if math.Abs(uni-math.Log(4)) > 1e-9 || cond > 1e-9 {
		t.Errorf("cycle: Entropies = %v, %v; want ln 4, 0", uni, cond)
	}
	// Alternating between 0 and a fair coin over {1, 2}: the pair table gives
	// H(next|cur) = (H after 0 = ln 2 + H after 1 or 2 = 0)/2.
	s = []uint16{0, 1, 0, 2, 0, 2, 0, 1, 0}
	_, cond = Entropies(s)
	if want := math.Log(2) / 2; math.Abs(cond-want) > 1e-9 {
		t.Errorf("coin: H(next|cur) = %v, want %v", cond, want)
	}
	if u, c := Entropies([]uint16{5}); u != 0 || c != 0 {
		t.Errorf("one token: Entropies = %v, %v; want 0, 0", u, c)
	}
}

func BenchmarkSynthetic(b *testing.B) {
	b.SetBytes(2 * 4_800_000)
	for b.Loop() {
		Synthetic(4_800_000, 788, 1)
	}
}
