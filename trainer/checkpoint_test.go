package trainer

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"memprobe/trainer/data"
	"os"
	"path/filepath"
	"slices"
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
	info, err := ReadCheckpointInfo(path)
	if err != nil || info.Config != o.Config || info.Step != 3 || info.Data == nil || info.Data.Source != ds.Source {
		t.Fatalf("ReadCheckpointInfo = %+v, %v; want %v at step 3 trained on %s", info, err, o.Config, ds.Source)
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
		{write("version.ck", badVersion), "version 9, this build reads versions 1 to 2", false},
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

// TestCheckpointData: a checkpoint records its training data, and going on
// from it with data whose ids mean other things (another character table,
// another synthetic language, characters for synthetic ids) is refused,
// naming both; the same ids from another source load, with a caveat; a
// version 1 checkpoint, which records no data, loads, with a caveat.
func TestCheckpointData(t *testing.T) {
	dir := t.TempDir()
	o := testOptions("micro", 1)
	o.GEMM = "naive"
	load := func(spec string, seed uint64) *data.Dataset {
		t.Helper()
		ds, err := data.Load(spec, o.Config.Vocab, seed)
		if err != nil {
			t.Fatal(err)
		}
		return ds
	}
	text := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.Repeat(s, 20)), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	abc := load(text("abc.txt", "abcab cabba "), 0)   // ' ', a, b, c
	same := load(text("same.txt", "cab abc bab "), 0) // the same four characters
	other := load(text("other.txt", "xyz zyx yy "), 0)
	synth1 := load("synthetic:1KB", 1)
	synth1big := load("synthetic:2KB", 1)
	synth2 := load("synthetic:1KB", 2)

	save := func(ds *data.Dataset) string {
		t.Helper()
		tr := newTestTrainer(t, o, ds)
		tr.Step()
		p := filepath.Join(dir, filepath.Base(ds.Source)+".ck")
		if err := tr.SaveCheckpoint(p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	abcCk, synthCk := save(abc), save(synth1)

	for _, c := range []dataCase{
		{abcCk, abc, nil, ""},
		{abcCk, same, nil, "was trained on " + abc.Source + ", this run reads " + same.Source},
		{abcCk, other, []string{abcCk, "map characters to ids differently", "3 of 4 ids differ; id 1 is 'a' in " + abc.Source + ", 'x' in " + other.Source}, ""},
		{abcCk, synth1, []string{"is a text of 4 characters", "is synthetic (vocabulary 13, seed 1)"}, ""},
		{synthCk, synth1big, nil, "was trained on synthetic:1KB, this run reads synthetic:2KB"},
		{synthCk, synth2, []string{"another synthetic language", "seed 1", "seed 2"}, ""},
	} {
		c.check(t, o)
	}
	checkV1Data(t, o, abcCk, other)
}

// dataCase is a checkpoint loaded with a dataset, and what should come of
// it.
type dataCase struct {
	ck      string
	ds      *data.Dataset
	refused []string // substrings of the error; nil: loads
	note    string   // substring of the one caveat; "": none
}

// check loads c.ck into a trainer over c.ds: refused naming each of
// c.refused, or loaded with c.note as its one caveat (none for "").
func (c dataCase) check(t *testing.T, o Options) {
	t.Helper()
	name := filepath.Base(c.ck) + " with " + filepath.Base(c.ds.Source)
	tr := newTestTrainer(t, o, c.ds)
	err := tr.LoadCheckpoint(c.ck)
	if c.refused != nil {
		if err == nil {
			t.Errorf("%s: loaded, want refused", name)
			return
		}
		for _, want := range c.refused {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q does not say %q", name, err, want)
			}
		}
		return
	}
	if err != nil {
		t.Errorf("%s: %v", name, err)
	}
	info, err := ReadCheckpointInfo(c.ck)
	if err != nil {
		t.Fatal(err)
	}
	notes := CheckpointDataNotes(c.ck, info, c.ds)
	if c.note == "" && len(notes) != 0 || c.note != "" && (len(notes) != 1 || !strings.Contains(notes[0], c.note)) {
		t.Errorf("%s: notes %q, want %q", name, notes, c.note)
	}
}

// checkV1Data: the checkpoint ck in version 1's layout, without its data,
// loads with any data (ds) and says it could not check.
func checkV1Data(t *testing.T, o Options, ck string, ds *data.Dataset) {
	t.Helper()
	b, err := os.ReadFile(ck)
	if err != nil {
		t.Fatal(err)
	}
	v1 := filepath.Join(filepath.Dir(ck), "v1.ck")
	if err := os.WriteFile(v1, checkpointV1(t, b), 0o644); err != nil {
		t.Fatal(err)
	}
	tr := newTestTrainer(t, o, ds)
	if err := tr.LoadCheckpoint(v1); err != nil {
		t.Fatalf("version 1 checkpoint: %v", err)
	}
	info, err := ReadCheckpointInfo(v1)
	if err != nil || info.Data != nil || info.Step != 1 {
		t.Fatalf("version 1 checkpoint: %+v, %v; want no data at step 1", info, err)
	}
	if n := CheckpointDataNotes(v1, info, ds); len(n) != 1 || !strings.Contains(n[0], "does not record its training data (version 1)") {
		t.Errorf("version 1 notes %q", n)
	}
}

// checkpointV1 rewrites a version 2 checkpoint in version 1's layout: no
// data fields, the CRC recomputed.
func checkpointV1(t *testing.T, b []byte) []byte {
	t.Helper()
	if v := binary.LittleEndian.Uint32(b[8:]); v != 2 {
		t.Fatalf("version %d, want 2", v)
	}
	n := int(binary.LittleEndian.Uint32(b[12:]))
	m := int(binary.LittleEndian.Uint32(b[16+n:]))
	out := slices.Concat(b[:16+n], b[16+n+4+m:len(b)-4])
	binary.LittleEndian.PutUint32(out[8:], 1)
	return binary.LittleEndian.AppendUint32(out, crc32.ChecksumIEEE(out))
}
