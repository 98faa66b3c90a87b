package nn

import (
	"fmt"
	"math"
)

func checkTarget(t int, target uint16, V int) {
	if int(target) >= V {
		panic(fmt.Sprintf("nn: targets[%d] = %d is outside a vocabulary of %d", t, target, V))
	}
}

// SoftmaxCrossEntropyForward turns each row of logits into probabilities
// with a max-subtracted softmax and writes losses[t] = -ln probs[t, targets[t]]
// (computed as logsumexp - logit so that it stays finite when the
// probability underflows).
//
//	losses        (T)
//	probs, logits (T, V)
//	targets       (T)
func SoftmaxCrossEntropyForward(losses, probs, logits []float32, targets []uint16, T, V int) {
	losses = losses[:T]
	probs = probs[:T*V]
	logits = logits[:T*V]
	targets = targets[:T]
	for t, target := range targets {
		checkTarget(t, target, V)
		l := logits[t*V : t*V+V]
		p := probs[t*V : t*V+V]
		p = p[:len(l)]
		copy(p, l)
		maxv := vMax(p)
		sum := vExpSub(p, maxv)
		vScale(p, 1/sum)
		losses[t] = float32(math.Log(float64(sum))) + (maxv - l[target])
	}
}

// SoftmaxCrossEntropyBackward accumulates dlogits += dloss·(probs - onehot(target))
// for each row. dloss is the gradient of the caller's loss with respect to
// every losses[t]; the trainer's mean loss passes 1/(B*T).
func SoftmaxCrossEntropyBackward(dlogits, probs []float32, targets []uint16, dloss float32, T, V int) {
	dlogits = dlogits[:T*V]
	probs = probs[:T*V]
	targets = targets[:T]
	for t, target := range targets {
		checkTarget(t, target, V)
		d := dlogits[t*V : t*V+V]
		vAxpy(d, probs[t*V:t*V+V], dloss)
		d[target] -= dloss
	}
}

// SoftmaxCrossEntropyBackwardInto is SoftmaxCrossEntropyBackward
// overwriting dlogits = dloss·(probs - onehot(target)), so the caller need
// not clear it first.
func SoftmaxCrossEntropyBackwardInto(dlogits, probs []float32, targets []uint16, dloss float32, T, V int) {
	dlogits = dlogits[:T*V]
	probs = probs[:T*V]
	targets = targets[:T]
	for t, target := range targets {
		checkTarget(t, target, V)
		d := dlogits[t*V : t*V+V]
		vScaleInto(d, probs[t*V:t*V+V], dloss)
		d[target] -= dloss
	}
}

// SoftmaxCrossEntropyForwardNaive is the reference of
// SoftmaxCrossEntropyForward, in float64.
func SoftmaxCrossEntropyForwardNaive(losses, probs, logits []float32, targets []uint16, T, V int) {
	for t := 0; t < T; t++ {
		checkTarget(t, targets[t], V)
		maxv := math.Inf(-1)
		for i := 0; i < V; i++ {
			maxv = math.Max(maxv, float64(logits[t*V+i]))
		}
		var sum float64
		for i := 0; i < V; i++ {
			sum += math.Exp(float64(logits[t*V+i]) - maxv)
		}
		for i := 0; i < V; i++ {
			probs[t*V+i] = float32(math.Exp(float64(logits[t*V+i])-maxv) / sum)
		}
		losses[t] = float32(math.Log(sum) + maxv - float64(logits[t*V+int(targets[t])]))
	}
}

// SoftmaxCrossEntropyBackwardNaive is the reference of
// SoftmaxCrossEntropyBackward.
func SoftmaxCrossEntropyBackwardNaive(dlogits, probs []float32, targets []uint16, dloss float32, T, V int) {
	for t := 0; t < T; t++ {
		checkTarget(t, targets[t], V)
		for i := 0; i < V; i++ {
			ind := 0.0
			if i == int(targets[t]) {
				ind = 1
			}
			dlogits[t*V+i] += float32(float64(dloss) * (float64(probs[t*V+i]) - ind))
		}
	}
}

// SoftmaxCrossEntropyBackwardIntoNaive is the reference of
// SoftmaxCrossEntropyBackwardInto: it zeroes dlogits and runs
// SoftmaxCrossEntropyBackwardNaive.
func SoftmaxCrossEntropyBackwardIntoNaive(dlogits, probs []float32, targets []uint16, dloss float32, T, V int) {
	clear(dlogits[:T*V])
	SoftmaxCrossEntropyBackwardNaive(dlogits, probs, targets, dloss, T, V)
}
