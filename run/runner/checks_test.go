package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestSweepRanges: a sweep value is checked with the range of probe
// train's flag (trainer.MaxThreads, trainer.MaxCacheScale), NaN and
// infinities included, when the sweep is read: before any child.
func TestSweepRanges(t *testing.T) {
	for s, want := range map[string]string{
		"cache-scale=0.5":    "--sweep cache-scale: 0.5 out of range [1, 64]",
		"cache-scale=1,65":   "--sweep cache-scale: 65 out of range [1, 64]",
		"cache-scale=NaN":    `--sweep cache-scale: "NaN" is not a number`,
		"cache-scale=+Inf":   `--sweep cache-scale: "+Inf" is not a number`,
		"cache-scale=0":      "--sweep cache-scale: 0 out of range [1, 64]",
		"threads=1,1025":     "--sweep threads: 1025 out of range [1, 1024]",
		"threads=-2":         "--sweep threads: -2 out of range [1, 1024]",
		"decode=per-token":   `--sweep decode: parsing decode mode "per-token"`,
		"batch-alloc=eager,": `--sweep batch-alloc: --batch-alloc ""`,
	} {
		_, err := ParseAxis(s)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("--sweep %s: %v, want one line containing %q", s, err, want)
		}
	}
	for _, s := range []string{"cache-scale=1,1.5,64", "threads=1,1024", "decode=batch", "batch-alloc=eager,lazy"} {
		if _, err := ParseAxis(s); err != nil {
			t.Errorf("--sweep %s: %v", s, err)
		}
	}
}

// TestInputsCheckedFirst: what every child would refuse (a --data file
// that is missing, empty, a directory or a pipe, a synthetic size below
// the vocabulary, a --profile-dir that is a file, a decode sweep over the
// tape engine, a report over the data) is one OptionsError naming the
// flag, before any child starts: no report is written, no child runs
// (each configuration's fake child would crash).
func TestInputsCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.txt")
	text := filepath.Join(dir, "text.txt")
	file := filepath.Join(dir, "keep.out")
	fifo := filepath.Join(dir, "fifo")
	for _, f := range []string{empty, file} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(text, []byte("some text to train on\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	decode, err := ParseAxis("decode=batch")
	if err != nil {
		t.Fatal(err)
	}
	const crashAll = "crash:decode-before;crash:decode-P1;crash:decode-P2;crash:decode-P3;crash:arena-before;crash:arena-P2"
	for _, c := range []struct {
		name string
		set  func(*Options)
		want string
	}{
		{"missing data", func(o *Options) { o.Data = filepath.Join(dir, "missing.txt") }, "--data " + filepath.Join(dir, "missing.txt") + ": no such file or directory"},
		{"empty data", func(o *Options) { o.Data = empty }, "--data " + empty + ": file is empty"},
		{"data directory", func(o *Options) { o.Data = dir }, "--data " + dir + ": is a directory"},
		{"data pipe", func(o *Options) { o.Data = fifo }, "--data " + fifo + ": not a regular file (a named pipe)"},
		{"unknown data kind", func(o *Options) { o.Data = "hf:tinystories" }, `--data: dataset "hf:tinystories": unknown kind "hf"`},
		{"synthetic below vocab", func(o *Options) { o.Data = "synthetic:50B" }, `--data: loading dataset "synthetic:50B": 10 tokens`},
		{"bad synthetic size", func(o *Options) { o.Data = "synthetic:lots" }, `--data: loading dataset "synthetic:lots": parsing size "lots"`},
		{"profile dir is a file", func(o *Options) { o.ProfileDir = file }, "--profile-dir " + file + ": exists and is not a directory"},
		{"profile dir under a file", func(o *Options) { o.ProfileDir = filepath.Join(file, "p") }, "--profile-dir " + filepath.Join(file, "p") + ": cannot be created: " + file + " is not a directory"},
		{"decode sweep on the tape engine", func(o *Options) { o.Plans, o.Sweep = []string{"arena"}, []Axis{decode} }, "--sweep decode=batch: arena-before decode=batch runs the tape engine"},
		{"report over the data", func(o *Options) { o.Data = text; o.Out = text }, "--out " + text + ": is also the input --data " + text},
	} {
		o := fakeOptions(t, crashAll)
		o.Plans = []string{"decode"}
		c.set(&o)
		rep, err := Run(context.Background(), o)
		var oe *OptionsError
		if !errors.As(err, &oe) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one OptionsError line containing %q", c.name, err, c.want)
		}
		if rep != nil {
			t.Errorf("%s: a report of %d runs", c.name, len(rep.Runs))
		}
		if o.Out != text {
			if _, err := os.Stat(o.Out); err == nil {
				t.Errorf("%s: a report was written", c.name)
			}
		}
		noChildrenLeft(t)
	}
	if b, err := os.ReadFile(text); err != nil || string(b) != "some text to train on\n" {
		t.Errorf("the data file was changed: %.80q, %v", b, err)
	}

	// A file with text and a profile directory still to be made pass,
	// and the check creates nothing.
	o := fakeOptions(t, "")
	o.Plans, o.Data, o.ProfileDir = []string{"decode"}, text, filepath.Join(dir, "profiles", "run1")
	if _, err := Prepare(&o); err != nil {
		t.Errorf("--data %s --profile-dir %s: %v", text, o.ProfileDir, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "profiles")); err == nil {
		t.Error("checking --profile-dir created it")
	}
	o.ProfileDir = dir
	if _, err := Prepare(&o); err != nil {
		t.Errorf("an existing --profile-dir: %v", err)
	}
}
