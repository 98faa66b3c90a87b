package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"memprobe/trainer/model"
)

func runProbe(args ...string) (stdout, stderr string, err error) {
	var o, e bytes.Buffer
	err = run(&o, &e, args)
	return o.String(), e.String(), err
}

// TestUsageErrors: a bad command line is a usage error (exit 2) with one
// line naming the flag and what is wrong.
func TestUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"train", "--threads", "0"}, "threads 0 out of range [1, 1024]"},
		{[]string{"train", "--threads", "2000"}, "threads 2000 out of range [1, 1024]"},
		{[]string{"train", "--steps", "0"}, "steps 0 out of range"},
		{[]string{"train", "--preset", "huge"}, `unknown preset "huge"`},
		{[]string{"train", "--heads", "7"}, "dim 256 is not divisible by heads 7"},
		{[]string{"train", "--lr", "-1"}, "lr -1 out of range"},
		{[]string{"train", "--no-such-flag"}, "unknown flag: --no-such-flag"},
		{[]string{"train", "--threads", "many"}, `invalid argument "many"`},
		{[]string{"train", "extra-arg"}, "unknown command"},
		// docs/reliability.md: bad command lines.
		{[]string{"train", "--threads", "-3"}, "threads -3 out of range [1, 1024]"},
		{[]string{"train", "--threads", "1025"}, "threads 1025 out of range [1, 1024]"},
		{[]string{"train", "--gemm", "foo"}, `gemm backend "foo" is not available in this build`},
		{[]string{"train", "--device", "tpu"}, "--device tpu: a device runs only the decode head"},
		{[]string{"train", "--plan", "foo"}, `plan "foo": not one of threads, arena, embedding, decode`},
		{[]string{"train", "--plan", "threads", "--phase", "P9"}, `phase "P9" of plan threads`},
		{[]string{"train", "--data", "synthetic:-1"}, `loading dataset "synthetic:-1": parsing size "-1"`},
		{[]string{"train", "--data", "synthetic:1PB"}, `unknown unit "PB"`},
		{[]string{"train", "--data", "synthetic:abc"}, `loading dataset "synthetic:abc": parsing size "abc"`},
		{[]string{"train", "--mem-limit", "abc"}, `--mem-limit: parsing size "abc"`},
		{[]string{"train", "--mem-limit", "0"}, "--mem-limit 0 must be positive"},
		{[]string{"train", "--json", "nodir/x.json"}, "--json nodir/x.json: directory nodir: no such file or directory"},
		{[]string{"train", "--json", "."}, "--json .: is a directory"},
	} {
		_, _, err := runProbe(c.args...)
		var ue usageError
		if err == nil || !errors.As(err, &ue) {
			t.Errorf("%v: got %v, want a usage error", c.args, err)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: error %q, want one line containing %q", c.args, err, c.want)
		}
	}
}

// TestBadData: a missing or empty data file is an error naming the file, not
// a usage error, and writes no JSON.
func TestBadData(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.txt")
	os.WriteFile(empty, nil, 0o644)
	out := filepath.Join(dir, "out.json")
	for _, path := range []string{filepath.Join(dir, "missing.txt"), empty} {
		_, _, err := runProbe("train", "--preset", "tiny", "--steps", "1", "--data", path, "--json", out)
		if err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("--data %s: got %v, want an error naming the file", path, err)
		}
		var ue usageError
		if errors.As(err, &ue) {
			t.Errorf("--data %s: a bad file is not a usage error", path)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a failed run left %s behind", out)
	}
}

// TestTrainJSON runs a short job and checks the result carries every field
// the issue names, with sane values.
func TestTrainJSON(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "r.json")
	ck := filepath.Join(dir, "ck.bin")
	stdout, stderr, err := runProbe("train", "--preset", "tiny", "--threads", "3", "--steps", "3",
		"--data", "../../testdata/sample.txt", "--json", out, "--checkpoint", ck, "--generate", "20")
	if err != nil {
		t.Fatalf("probe train: %v\n%s", err, stderr)
	}
	if stdout != "" {
		t.Errorf("with --json, stdout should be empty, got %q", stdout)
	}
	if want := fmt.Sprintf("%d parameters", model.Presets["tiny"].NumParams()); !strings.Contains(stderr, want) {
		t.Errorf("stderr does not print the parameter count:\n%s", stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var r map[string]any
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("result is not JSON: %v", err)
	}
	for _, k := range []string{"params", "steps", "tokens_per_sec", "step_ns_median", "loss_first", "loss_last",
		"peak_rss_bytes", "go_heap_alloc_bytes_per_step", "go_heap_allocs_per_step"} {
		if _, ok := r[k]; !ok {
			t.Errorf("result has no %q", k)
		}
	}
	if r["steps"].(float64) != 3 || r["peak_rss_bytes"].(float64) <= 0 || r["tokens_per_sec"].(float64) <= 0 {
		t.Errorf("implausible result: steps %v, peak_rss_bytes %v, tokens_per_sec %v", r["steps"], r["peak_rss_bytes"], r["tokens_per_sec"])
	}
	if s, _ := r["generated_text"].(string); len([]rune(s)) != 20 {
		t.Errorf("sample %q, want 20 characters", s)
	}

	// Resume from the checkpoint: it starts at step 3.
	_, stderr, err = runProbe("train", "--preset", "tiny", "--steps", "1", "--data", "../../testdata/sample.txt",
		"--resume", ck, "--json", out)
	if err != nil {
		t.Fatalf("resume: %v\n%s", err, stderr)
	}
	b, _ = os.ReadFile(out)
	json.Unmarshal(b, &r)
	if r["start_step"].(float64) != 3 {
		t.Errorf("resumed run starts at step %v, want 3", r["start_step"])
	}
	// A checkpoint of another shape is refused.
	_, _, err = runProbe("train", "--preset", "tiny", "--dim", "32", "--steps", "1", "--data", "../../testdata/sample.txt", "--resume", ck)
	if err == nil || !strings.Contains(err.Error(), ck) {
		t.Errorf("resuming a C=64 checkpoint with --dim 32: %v", err)
	}
}
