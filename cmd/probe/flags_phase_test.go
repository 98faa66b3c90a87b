package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"memprobe/trainer"
)

// TestPhaseAfter: --phase after selects the plan's fixed state and the
// options record the phase it names.
func TestPhaseAfter(t *testing.T) {
	f, err := parseTrain(t, "--plan", "threads", "--phase", "after")
	if err != nil {
		t.Fatal(err)
	}
	o, err := f.options()
	if err != nil {
		t.Fatal(err)
	}
	if o.Plan != "threads" || o.Phase != "P6" || o.Trainer.Pathology != (trainer.Pathology{}) {
		t.Errorf("plan %q phase %q pathology %+v, want threads P6 and the fixed trainer", o.Plan, o.Phase, o.Trainer.Pathology)
	}
}

// TestOptionsValidatedOnce: a value out of range is found by the one
// validation (job.Options.Validate, in job.Run) and reported as a usage
// error naming it, before anything is built.
func TestOptionsValidatedOnce(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--threads", "0"}, "threads 0 out of range [1, 1024]"},
		{[]string{"--cache-scale", "0.5"}, "cache scale 0.5 out of range [1, 64]"},
		{[]string{"--engine", "jit"}, `engine "jit": want static or tape`},
		{[]string{"--gemm", "foo"}, `gemm backend "foo" is not available`},
		{[]string{"--warmup-steps", "-1"}, "warmup-steps -1 must be >= 0"},
	} {
		f, err := parseTrain(t, tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.options(); err != nil {
			t.Errorf("%v: options() checked a range itself: %v", tc.args, err)
		}
		err = run(new(strings.Builder), new(strings.Builder), append([]string{"train", "--data", "synthetic:100KB"}, tc.args...))
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want a usage error containing %q", tc.args, err, tc.want)
		}
	}
}

// TestTrainInputsCheckedFirst: a bad data spec or an output path that could
// not be written is a usage error at once, before anything is built; --json
// - means standard output.
func TestTrainInputsCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--data", "synthetic:abc"}, `dataset "synthetic:abc"`},
		{[]string{"--data", "hf:tinystories"}, `unknown kind "hf"`},
		{[]string{"--json", filepath.Join(dir, "nodir", "r.json")}, "--json " + filepath.Join(dir, "nodir", "r.json")},
		{[]string{"--json", dir}, "is a directory"},
		{[]string{"--checkpoint", filepath.Join(dir, "nodir", "c.ckpt")}, "checkpoint " + filepath.Join(dir, "nodir", "c.ckpt")},
	} {
		var out, errb strings.Builder
		err := run(&out, &errb, append([]string{"train", "--preset", "micro", "--steps", "1", "--data", "synthetic:100KB"}, tc.args...))
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want a usage error containing %q", tc.args, err, tc.want)
		}
		if strings.Contains(errb.String(), "step ") {
			t.Errorf("%v: trained before refusing:\n%s", tc.args, errb.String())
		}
	}
	var out, errb strings.Builder
	if err := run(&out, &errb, []string{"train", "--preset", "micro", "--steps", "1", "--data", "synthetic:100KB", "--json", "-"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"schema": "memprobe.train/`) {
		t.Errorf("--json -: stdout is not the result:\n%.200s", out.String())
	}
	if _, err := os.Stat("-"); err == nil {
		os.Remove("-")
		t.Error("--json - created a file named -")
	}
}
