package trainer

import (
	"context"
	"math"
	"strings"
	"testing"

	"memprobe/trainer/data"
)

// TestLossFalls is the first promise: on the synthetic corpus the
// tiny preset starts at about ln(788) = 6.67 and is below 4.0 within 200
// steps (lr 1e-2, seed 1337).
func TestLossFalls(t *testing.T) {
	if testing.Short() {
		t.Skip("200 training steps")
	}
	tr := newTestTrainer(t, testOptions("tiny", 2), testCorpus(t))
	stats, err := tr.Train(context.Background(), 200, nil)
	if err != nil {
		t.Fatal(err)
	}
	first := stats[0].Loss
	if math.Abs(float64(first)-math.Log(788)) > 0.15 {
		t.Errorf("first loss %.4f, want about ln(788) = %.4f", first, math.Log(788))
	}
	// The mean of the last 10 steps, so one noisy batch cannot decide.
	var last float64
	for _, s := range stats[190:] {
		last += float64(s.Loss) / 10
	}
	t.Logf("loss %.4f -> %.4f (mean of steps 191-200)", first, last)
	if last >= 4.0 {
		t.Errorf("mean loss of steps 191-200 is %.4f, want < 4.0", last)
	}
}

// TestLearnsText trains on the English sample in testdata (character level).
func TestLearnsText(t *testing.T) {
	if testing.Short() {
		t.Skip("training steps")
	}
	ds, err := data.Load("../testdata/sample.txt", 788, 1)
	if err != nil {
		t.Fatal(err)
	}
	if ds.Tokenizer == nil || ds.Vocab > 128 {
		t.Fatalf("sample.txt: vocab %d, tokenizer %v", ds.Vocab, ds.Tokenizer)
	}
	tr := newTestTrainer(t, testOptions("tiny", 2), ds)
	stats, err := tr.Train(context.Background(), 60, nil)
	if err != nil {
		t.Fatal(err)
	}
	first, last := stats[0].Loss, stats[len(stats)-1].Loss
	t.Logf("sample.txt: loss %.4f -> %.4f", first, last)
	if last > first-1.5 {
		t.Errorf("loss %.4f -> %.4f, want a fall of at least 1.5", first, last)
	}
	ids := tr.Generate(40, 7)
	if len(ids) != 40 {
		t.Fatalf("sampled %d tokens, want 40", len(ids))
	}
	for _, id := range ids {
		if int(id) >= tr.Config().Vocab {
			t.Fatalf("sampled id %d outside vocab %d", id, tr.Config().Vocab)
		}
	}
}

// TestZeroAllocsPerStep: after the first steps nothing is allocated, in any
// goroutine (so testing.AllocsPerRun, which sees only its own, won't do).
func TestZeroAllocsPerStep(t *testing.T) {
	o := testOptions("tiny", 7)
	tr := newTestTrainer(t, o, testCorpus(t))
	// Warm-up: the first steps fault in buffers and fill the runtime's
	// caches (sudogs for the workers that block).
	for i := 0; i < 5; i++ {
		tr.Step()
	}
	steps := 10
	rep := allocWindow(t, steps, func() { tr.Step() })
	if rep.ProgramObjects != 0 {
		t.Errorf("the trainer made %d heap allocations (%d B) over %d steady-state steps with gemm %s, want 0", rep.ProgramObjects, rep.ProgramBytes, steps, tr.GEMM().Name())
	}
	t.Logf("runtime-internal: %d objects over %d steps", rep.RuntimeObjects, steps)
}

func TestOptionsValidate(t *testing.T) {
	for _, c := range []struct {
		mut  func(*Options)
		want string
	}{
		{func(o *Options) { o.Threads = 0 }, "threads 0 out of range [1, 1024]"},
		{func(o *Options) { o.Threads = 1025 }, "threads 1025 out of range [1, 1024]"},
		{func(o *Options) { o.Optimizer.LR = 0 }, "lr 0 out of range (0, 10)"},
		{func(o *Options) { o.Optimizer.Beta2 = 1 }, "beta2 1 out of range [0, 1)"},
		{func(o *Options) { o.Config.Heads = 3 }, "dim 64 is not divisible by heads 3"},
		{func(o *Options) { o.GEMM = "nope" }, `gemm backend "nope" is not available`},
	} {
		o := testOptions("tiny", 2)
		c.mut(&o)
		err := o.Validate()
		if err == nil || !contains(err.Error(), c.want) {
			t.Errorf("got error %v, want it to contain %q", err, c.want)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
