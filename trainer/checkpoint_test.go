package trainer

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckpointResume: 3 steps, save, load into a fresh trainer, 2 more
// steps gives the same losses and parameters, bit for bit, as 5 steps in one go.
func TestCheckpointResume(t *testing.T) {
	ds := testCorpus(t)
	o := testOptions("tiny", 2)
	whole := newTestTrainer(t, o, ds)
	var want []float32
	for i := 0; i < 5; i++ {
		want = append(want, whole.Step())
	}

	path := filepath.Join(t.TempDir(), "ck.bin")
	first := newTestTrainer(t, o, ds)
	for i := 0; i < 3; i++ {
		first.Step()
	}
	if err := first.SaveCheckpoint(path); err != nil {
		t.Fatal(err)
	}
	cfg, err := ReadCheckpointConfig(path)
	if err != nil || cfg != o.Config {
		t.Fatalf("ReadCheckpointConfig = %v, %v; want %v", cfg, err, o.Config)
	}
	resumed := newTestTrainer(t, o, ds)
	if err := resumed.LoadCheckpoint(path); err != nil {
		t.Fatal(err)
	}
	if resumed.StepsDone() != 3 {
		t.Fatalf("resumed at step %d, want 3", resumed.StepsDone())
	}
	for i := 3; i < 5; i++ {
		if got := resumed.Step(); math.Float32bits(got) != math.Float32bits(want[i]) {
			t.Errorf("step %d after resume: loss %.9g, uninterrupted run %.9g", i+1, got, want[i])
		}
	}
	for i, p := range resumed.Param.Memory {
		if math.Float32bits(p) != math.Float32bits(whole.Param.Memory[i]) {
			t.Fatalf("parameter %d differs after resume", i)
		}
	}
	// Nothing but the checkpoint is left in the directory: no temp files.
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries after save, want 1", len(entries))
	}
}

func TestCheckpointErrors(t *testing.T) {
	ds := testCorpus(t)
	o := testOptions("tiny", 1)
	tr := newTestTrainer(t, o, ds)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.ck")
	if err := tr.SaveCheckpoint(good); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(good)
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, data, 0o644)
		return p
	}
	flipped := append([]byte(nil), b...)
	flipped[len(flipped)/2] ^= 0x40
	badMagic := append([]byte(nil), b...)
	copy(badMagic, "NOTACKPT")
	badVersion := append([]byte(nil), b...)
	badVersion[8] = 9

	for _, c := range []struct {
		path    string
		want    string
		corrupt bool
	}{
		{filepath.Join(dir, "missing.ck"), "no such file", false},
		{write("flipped.ck", flipped), "CRC mismatch", true},
		{write("truncated.ck", b[:len(b)-100]), "CRC mismatch", true},
		{write("short.ck", b[:10]), "too short", true},
		{write("magic.ck", badMagic), "wrong magic", true},
		{write("version.ck", badVersion), "version 9, this build reads version 1", false},
	} {
		err := tr.LoadCheckpoint(c.path)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.path) {
			t.Errorf("LoadCheckpoint(%s) = %v, want an error naming the file and containing %q", filepath.Base(c.path), err, c.want)
		}
		if c.corrupt && !errors.Is(err, ErrCorruptCheckpoint) {
			t.Errorf("LoadCheckpoint(%s) = %v, want ErrCorruptCheckpoint", filepath.Base(c.path), err)
		}
	}

	// A checkpoint of another model is refused, not silently reshaped.
	o2 := o
	o2.Config.Dim = 32
	other := newTestTrainer(t, o2, ds)
	if err := other.LoadCheckpoint(good); err == nil || !strings.Contains(err.Error(), "C=64") {
		t.Errorf("loading a C=64 checkpoint into a C=32 model: %v", err)
	}
}
