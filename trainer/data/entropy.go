package data

import (
	"math"
	"slices"
)

// Entropies returns the empirical (plug-in) unigram entropy H(X) of tokens
// and the conditional entropy H(next | current) of its successive pairs,
// both in nats. A model that sees only the current token can reach a
// cross-entropy loss near the conditional entropy; one that sees no context,
// near the unigram entropy. Plug-in estimates run low on short streams.
func Entropies(tokens []uint16) (unigramNats, conditionalNats float64) {
	if len(tokens) < 2 {
		return 0, 0
	}
	var uni [1 << 16]int64
	for _, t := range tokens {
		uni[t]++
	}
	unigramNats = entropyOfCounts(uni[:], int64(len(tokens)))

	// H(next | cur) = H(cur, next) - H(cur) over the len-1 pairs.
	pairs := make([]uint32, len(tokens)-1)
	for i := range pairs {
		pairs[i] = uint32(tokens[i])<<16 | uint32(tokens[i+1])
	}
	slices.Sort(pairs)
	var joint []int64
	for i := 0; i < len(pairs); {
		j := i + 1
		for j < len(pairs) && pairs[j] == pairs[i] {
			j++
		}
		joint = append(joint, int64(j-i))
		i = j
	}
	uni[tokens[len(tokens)-1]]-- // the last token is never a "current" token
	n := int64(len(pairs))
	conditionalNats = entropyOfCounts(joint, n) - entropyOfCounts(uni[:], n)
	return unigramNats, max(conditionalNats, 0)
}

func entropyOfCounts(counts []int64, total int64) float64 {
	h := 0.0
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / float64(total)
			h -= p * math.Log(p)
		}
	}
	return h
}
