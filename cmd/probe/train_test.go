package main

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"memprobe/schema"
	"memprobe/trainer/model"
)

// trainArgs is a short train run: micro preset, two steps, a small corpus.
func trainArgs(args ...string) []string {
	return append([]string{"train", "--preset", "micro", "--steps", "2", "--threads", "1", "--data", "synthetic:64KB"}, args...)
}

// writeKeep writes content to path and returns a check that the file
// still holds it.
func writeKeep(t *testing.T, path, content string) func(what string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return func(what string) {
		t.Helper()
		if b, err := os.ReadFile(path); err != nil || string(b) != content {
			t.Errorf("%s: %s now holds %.40q (%v), want %.40q", what, path, b, err, content)
		}
	}
}

// noTempFiles fails when dir holds a file the atomic writes or the staged
// profiles would have left behind.
func noTempFiles(t *testing.T, dir, what string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("%s: temporary file %s left in %s", what, e.Name(), dir)
		}
	}
}

// TestTrainOutputsDistinct: an output of train that names an input or
// another output (the checkpoint overwritten by the JSON, a data file by
// a profile) is a usage error before any work, naming both flags, and
// leaves the file as it was. Before, each of these exited 0 with one file
// written over the other.
func TestTrainOutputsDistinct(t *testing.T) {
	dir := t.TempDir()
	ck := filepath.Join(dir, "ck.bin")
	if _, stderr, err := runProbe(trainArgs("--checkpoint", ck)...); err != nil {
		t.Fatalf("probe train: %v\n%s", err, stderr)
	}
	ckBytes, _ := os.ReadFile(ck)
	x := filepath.Join(dir, "x")
	text := filepath.Join(dir, "text.txt")
	link := filepath.Join(dir, "link.txt")
	if err := os.Symlink(text, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{trainArgs("--json", x, "--checkpoint", x), "--checkpoint " + x + ": --json names the same file"},
		{trainArgs("--json", x, "--memprofile", x), "--memprofile " + x + ": --json names the same file"},
		{trainArgs("--json", x, "--cpuprofile", x), "--cpuprofile " + x + ": --json names the same file"},
		{trainArgs("--checkpoint", x, "--allocprofile", x), "--allocprofile " + x + ": --checkpoint names the same file"},
		{trainArgs("--mutexprofile", x, "--blockprofile", x), "--blockprofile " + x + ": --mutexprofile names the same file"},
		{trainArgs("--json", filepath.Join(dir, "p", "default.heap.pprof"), "--profile-dir", filepath.Join(dir, "p")),
			"--profile-dir " + filepath.Join(dir, "p", "default.heap.pprof") + ": --json names the same file"},
		{trainArgs("--resume", ck, "--checkpoint", ck), "--checkpoint " + ck + ": is also the input --resume " + ck},
		{trainArgs("--resume", ck, "--json", ck), "--json " + ck + ": is also the input --resume " + ck},
		{append(trainArgs("--json", text), "--data", text), "--json " + text + ": is also the input --data " + text},
		{append(trainArgs("--cpuprofile", link), "--data", text), "--cpuprofile " + link + ": is also the input --data " + text},
		{append(trainArgs("--checkpoint", "./"+filepath.Base(text)), "--data", text), ": is also the input --data " + text},
	} {
		keepX := writeKeep(t, x, "x's contents")
		keepText := writeKeep(t, text, strings.Repeat("some text to train on\n", 50))
		if strings.Contains(strings.Join(c.args, " "), "./text.txt") {
			t.Chdir(dir)
		}
		_, stderr, err := runProbe(c.args...)
		if !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v, want a one-line usage error containing %q", c.args[9:], err, c.want)
		}
		if strings.Contains(stderr, "model ") {
			t.Errorf("%v: started before refusing", c.args[9:])
		}
		keepX(strings.Join(c.args[9:], " "))
		keepText(strings.Join(c.args[9:], " "))
		if b, _ := os.ReadFile(ck); string(b) != string(ckBytes) {
			t.Errorf("%v: the checkpoint changed", c.args[9:])
		}
	}
	// Distinct files pass: resume from one checkpoint, write another.
	if _, stderr, err := runProbe(trainArgs("--resume", ck, "--checkpoint", filepath.Join(dir, "ck2.bin"), "--json", x)...); err != nil {
		t.Errorf("distinct outputs: %v\n%s", err, stderr)
	}
}

// TestTrainFailedRunKeepsProfiles: a run that fails (a missing data file,
// an empty one) writes no profile: the files named by the profile flags
// keep what they held, and no temporary file is left beside them. Before,
// each held a profile of the failed run (the CPU profile's file was
// created at the start). The JSON of a failed run is not written either.
func TestTrainFailedRunKeepsProfiles(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.txt")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, data := range []string{filepath.Join(dir, "missing.txt"), empty} {
		for _, flag := range []string{"--cpuprofile", "--memprofile", "--allocprofile", "--mutexprofile", "--blockprofile"} {
			k := filepath.Join(dir, "k")
			keep := writeKeep(t, k, "keep")
			_, _, err := runProbe(append(trainArgs(flag, k), "--data", data)...)
			if err == nil || errors.As(err, new(usageError)) || !strings.Contains(err.Error(), data) {
				t.Errorf("%s with --data %s: %v, want a runtime error naming the file", flag, data, err)
			}
			keep(flag + " with --data " + data)
			noTempFiles(t, dir, flag)
		}
	}
	// Every profile into a directory, and the heap-peak profiles.
	pd := filepath.Join(dir, "prof")
	if err := os.Mkdir(pd, 0o755); err != nil {
		t.Fatal(err)
	}
	keeps := map[string]func(string){}
	for _, kind := range []string{"cpu", "heap", "allocs", "mutex", "block"} {
		keeps[kind] = writeKeep(t, filepath.Join(pd, "default."+kind+".pprof"), "old "+kind)
	}
	if _, _, err := runProbe(append(trainArgs("--profile-dir", pd), "--data", empty)...); err == nil {
		t.Fatal("--data of an empty file: no error")
	}
	for kind, keep := range keeps {
		keep("--profile-dir, " + kind)
	}
	noTempFiles(t, pd, "--profile-dir")

	// A run that succeeds replaces them.
	k := filepath.Join(dir, "k")
	writeKeep(t, k, "keep")
	if _, stderr, err := runProbe(trainArgs("--cpuprofile", k, "--json", filepath.Join(dir, "r.json"))...); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if b, _ := os.ReadFile(k); len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Errorf("--cpuprofile of a run that succeeded: %.20q, want a gzipped profile", b)
	}
	if fi, err := os.Stat(k); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("--cpuprofile mode: %v %v, want 0644", fi.Mode(), err)
	}
	noTempFiles(t, dir, "a run that succeeded")
}

// TestTrainProfilePathsChecked: a profile path that could not be written
// is a usage error (exit 2, as for --json and --checkpoint) naming the
// flag, before any work. Before, --cpuprofile and --memprofile failed
// with exit 1 (the CPU profile when it was created, at the start).
func TestTrainProfilePathsChecked(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	nodir := filepath.Join(dir, "nodir", "p.pprof")
	for _, c := range []struct {
		args []string
		want string
	}{
		{trainArgs("--cpuprofile", nodir), "--cpuprofile " + nodir + ": directory " + filepath.Dir(nodir) + ": no such file or directory"},
		{trainArgs("--memprofile", nodir), "--memprofile " + nodir + ": directory"},
		{trainArgs("--allocprofile", nodir), "--allocprofile " + nodir + ": directory"},
		{trainArgs("--mutexprofile", dir), "--mutexprofile " + dir + ": is a directory"},
		{trainArgs("--blockprofile", filepath.Join(file, "b")), "--blockprofile " + filepath.Join(file, "b") + ": " + file + " is not a directory"},
		{trainArgs("--profile-dir", file), "--profile-dir " + file + ": exists and is not a directory"},
		{trainArgs("--profile-dir", filepath.Join(file, "sub")), "--profile-dir " + filepath.Join(file, "sub") + ": cannot be created: " + file + " is not a directory"},
		{trainArgs("--checkpoint", nodir), "--checkpoint " + nodir + ": directory"},
	} {
		_, stderr, err := runProbe(c.args...)
		if !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v, want a one-line usage error containing %q", c.args[9:], err, c.want)
		}
		if strings.Contains(stderr, "model ") {
			t.Errorf("%v: started before refusing", c.args[9:])
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("the refused runs left %d files in %s, want only f", len(ents), dir)
	}
	// A profile directory still to be made passes, and is made.
	pd := filepath.Join(dir, "new", "prof")
	if _, stderr, err := runProbe(trainArgs("--profile-dir", pd, "--json", filepath.Join(dir, "r.json"))...); err != nil {
		t.Fatalf("--profile-dir %s: %v\n%s", pd, err, stderr)
	}
	if _, err := os.Stat(filepath.Join(pd, "default.cpu.pprof")); err != nil {
		t.Errorf("--profile-dir: %v", err)
	}
}

// TestTrainDataNotRegular: a data file that is a named pipe or a device is
// refused in one line naming it and its kind, before it is opened. Before,
// a pipe with no writer blocked in open() for ever (deaf to SIGINT and
// SIGTERM) and /dev/zero was read until the process ran out of memory.
func TestTrainDataNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "ff")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no named pipes here:", err)
	}
	cases := map[string]string{fifo: "not a regular file (a named pipe)"}
	if _, err := os.Stat("/dev/zero"); err == nil {
		cases["/dev/zero"] = "not a regular file (a character device)"
	}
	for path, want := range cases {
		for _, cmd := range [][]string{
			append(trainArgs(), "--data", path),
			{"decode", "--preset", "micro", "--passes", "1", "--decode", "batch", "--data", path},
		} {
			done := make(chan error, 1)
			go func() { _, _, err := runProbe(cmd...); done <- err }()
			var err error
			select {
			case err = <-done:
			case <-time.After(2 * time.Minute): // a guard against hanging for ever, not a timing check
				t.Fatalf("%s --data %s: still running after two minutes", cmd[0], path)
			}
			if err == nil || !strings.Contains(err.Error(), `"`+path+`": `+want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%s --data %s: %v, want one line naming it and %q", cmd[0], path, err, want)
			}
		}
	}
}

// TestTrainExplicitValuesNotDefaults: a flag given explicitly with the
// value the options read as "unset" is refused as out of range, not run
// as the default; an explicit --warmup-steps that leaves no step measured
// is refused naming both flags. Before, each ran (as cache scale 1, a 10
// ms sampler, the auto GEMM, warm-up steps-1) and recorded what it did
// not use.
func TestTrainExplicitValuesNotDefaults(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--warmup-steps", "5"}, "--warmup-steps 5 must be below --steps 2"},
		{[]string{"--warmup-steps", "2"}, "--warmup-steps 2 must be below --steps 2"},
		{[]string{"--cache-scale", "0"}, "--cache-scale 0 out of range [1, 64]"},
		{[]string{"--sample-interval", "0"}, "--sample-interval 0s is below the minimum 1ms"},
		{[]string{"--sample-max-points", "0"}, "--sample-max-points 0 must be >= 2"},
		{[]string{"--gemm", ""}, `--gemm "": want auto or one of`},
		{[]string{"--engine", ""}, `--engine "": want static or tape`},
	} {
		_, stderr, err := runProbe(trainArgs(c.args...)...)
		if !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v, want a one-line usage error containing %q", c.args, err, c.want)
		}
		if strings.Contains(stderr, "model ") {
			t.Errorf("%v: started before refusing", c.args)
		}
	}
	// The defaults stay defaults: --steps 1 with the default warm-up of 1
	// runs, measures its one step and records the warm-up it used (0).
	for _, c := range []struct {
		args   []string
		warmup float64
	}{
		{[]string{"--steps", "1"}, 0},
		{[]string{"--steps", "2"}, 1},
		{[]string{"--steps", "3", "--warmup-steps", "2"}, 2},
	} {
		stdout, stderr, err := runProbe(append(trainArgs(), c.args...)...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", c.args, err, stderr)
		}
		var r struct {
			Config struct {
				WarmupSteps float64 `json:"warmup_steps"`
			} `json:"config"`
			Runtime struct {
				Steady struct {
					WarmupSteps float64 `json:"warmup_steps"`
				} `json:"steady"`
			} `json:"runtime"`
		}
		if err := json.Unmarshal([]byte(stdout), &r); err != nil {
			t.Fatal(err)
		}
		if r.Config.WarmupSteps != c.warmup || r.Runtime.Steady.WarmupSteps != c.warmup {
			t.Errorf("%v: config.warmup_steps %v, runtime.steady.warmup_steps %v; want both %v",
				c.args, r.Config.WarmupSteps, r.Runtime.Steady.WarmupSteps, c.warmup)
		}
	}
}

// TestResumeWrongShapeMessage: resuming a checkpoint of another model
// says what the checkpoint holds, its own batch included. Before, it
// printed this run's batch as the checkpoint's (B=32 for a micro
// checkpoint, whose batch is 3).
func TestResumeWrongShapeMessage(t *testing.T) {
	dir := t.TempDir()
	ck := filepath.Join(dir, "ck.bin")
	if _, stderr, err := runProbe(trainArgs("--checkpoint", ck)...); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	_, _, err := runProbe("train", "--preset", "tiny", "--steps", "1", "--data", "synthetic:64KB", "--resume", ck)
	want := "reading checkpoint " + ck + ": it holds a model with " + model.Presets["micro"].String() +
		", this run is configured for " + model.Presets["tiny"].String()
	if err == nil || err.Error() != want {
		t.Errorf("resume of a micro checkpoint as tiny: %v\nwant %s", err, want)
	}
}

// TestResumeOtherData: a checkpoint trained on one text, resumed on a text
// whose characters map to other ids, is refused in one line naming both
// (exit 1, nothing written); resumed on the same text it goes on, and the
// characters sent to <unk> (the micro preset has 13 ids for sample.txt's
// many characters) are a warning in the result and on stderr, not silent.
func TestResumeOtherData(t *testing.T) {
	dir := t.TempDir()
	sample := "../../testdata/sample.txt"
	other := filepath.Join(dir, "other.txt")
	if err := os.WriteFile(other, []byte(strings.Repeat("0123456789+-= ", 50)), 0o644); err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(dir, "ck.bin")
	args := func(data string, more ...string) []string {
		return append([]string{"train", "--preset", "micro", "--steps", "1", "--threads", "1", "--data", data}, more...)
	}
	_, stderr, err := runProbe(args(sample, "--checkpoint", ck)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "warning: dataset file \""+sample+"\": ") || !strings.Contains(stderr, "map to <unk> id 12") {
		t.Errorf("no <unk> warning on stderr:\n%s", stderr)
	}

	out := filepath.Join(dir, "out.json")
	_, _, err = runProbe(args(other, "--resume", ck, "--json", out)...)
	want := "checkpoint " + ck + " was trained on other data: " + sample + " and " + other + " map characters to ids differently"
	if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Errorf("resume on other characters: %v\nwant %s...", err, want)
	}
	if errors.As(err, new(usageError)) || errors.As(err, new(interface{ ExitCode() int })) {
		t.Errorf("%v: not exit status 1", err)
	}
	if _, serr := os.Stat(out); !os.IsNotExist(serr) {
		t.Errorf("a refused resume wrote %s", out)
	}

	if _, stderr, err = runProbe(args(sample, "--resume", ck, "--json", out)...); err != nil {
		t.Fatalf("resume on the same text: %v\n%s", err, stderr)
	}
	r, err := schema.ReadResult(out)
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(r.Warnings, "\n"); !strings.Contains(w, "map to <unk> id 12") {
		t.Errorf("result warnings %q do not carry the <unk> caveat", r.Warnings)
	}
}

// TestTrainTerminalFormat: on a terminal, train prints the summary's
// tables to stdout and no JSON, with a hint on stderr; --format json and
// --json - print the JSON there; elsewhere stdout is JSON as before, and
// --format text prints the tables anywhere.
func TestTrainTerminalFormat(t *testing.T) {
	tty := false
	stdoutIsTerminal = func(io.Writer) bool { return tty }
	t.Cleanup(func() { stdoutIsTerminal = isTerminal })
	isJSON := func(s string) bool {
		var r schema.Result
		return json.Unmarshal([]byte(s), &r) == nil && r.Schema != ""
	}
	isTables := func(s string) bool {
		return strings.Contains(s, "component") && strings.Contains(s, "done: ") && !strings.Contains(s, "{")
	}
	const hint = "stdout is a terminal: the tables, not the result JSON"
	for _, c := range []struct {
		tty        bool
		args       []string
		wantTables bool // else JSON
	}{
		{true, nil, true},
		{true, []string{"--format", "json"}, false},
		{true, []string{"--json", "-"}, false},
		{false, nil, false},
		{false, []string{"--format", "text"}, true},
	} {
		tty = c.tty
		stdout, stderr, err := runProbe(trainArgs(c.args...)...)
		if err != nil {
			t.Fatalf("terminal %v, %v: %v\n%s", c.tty, c.args, err, stderr)
		}
		if c.wantTables && (!isTables(stdout) || isJSON(stdout)) {
			t.Errorf("terminal %v, %v: stdout is not the tables:\n%.300s", c.tty, c.args, stdout)
		}
		if !c.wantTables && !isJSON(stdout) {
			t.Errorf("terminal %v, %v: stdout is not the result JSON:\n%.300s", c.tty, c.args, stdout)
		}
		if got, want := strings.Contains(stderr, hint), c.tty && len(c.args) == 0; got != want {
			t.Errorf("terminal %v, %v: hint on stderr %v, want %v", c.tty, c.args, got, want)
		}
	}
	for _, args := range [][]string{{"--format", "xml"}, {"--format", "text", "--json", "-"}} {
		_, _, err := runProbe(trainArgs(args...)...)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--format") {
			t.Errorf("%v: %v, want a usage error naming --format", args, err)
		}
	}
}
