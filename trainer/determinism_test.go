package trainer

import (
	"math"
	"testing"
)

// TestDeterministicAcrossThreads checks the promise of the turnstile: the
// same seed gives the same losses and parameters, bit for bit, at 1, 2 and 7
// logical workers, and with 1, 2 or 3 executors.
func TestDeterministicAcrossThreads(t *testing.T) {
	steps := 4
	if testing.Short() {
		steps = 2
	}
	ds := testCorpus(t)
	type run struct{ threads, executors int }
	var ref []float32
	var refParams []float32
	for _, r := range []run{{1, 0}, {2, 0}, {7, 0}, {7, 3}, {63, 2}} {
		o := testOptions("tiny", r.threads)
		o.Executors = r.executors
		tr := newTestTrainer(t, o, ds)
		losses := make([]float32, steps)
		for i := range losses {
			losses[i] = tr.Step()
		}
		if ref == nil {
			ref, refParams = losses, append([]float32(nil), tr.Param.Memory...)
			t.Logf("threads 1: losses %v", losses)
			continue
		}
		for i := range losses {
			if math.Float32bits(losses[i]) != math.Float32bits(ref[i]) {
				t.Errorf("threads %d executors %d: step %d loss %.9g, threads 1 gave %.9g", r.threads, tr.NumExecutors(), i+1, losses[i], ref[i])
			}
		}
		for i, p := range tr.Param.Memory {
			if math.Float32bits(p) != math.Float32bits(refParams[i]) {
				t.Errorf("threads %d executors %d: parameter %d is %.9g, threads 1 gave %.9g", r.threads, tr.NumExecutors(), i, p, refParams[i])
				break
			}
		}
	}
}
