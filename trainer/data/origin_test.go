package data

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOrigin(t *testing.T) {
	dir := t.TempDir()
	file := func(name, text string, vocabCap int) *Dataset {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		ds, err := Load(p, vocabCap, 0)
		if err != nil {
			t.Fatal(err)
		}
		return ds
	}
	// "aaabc" under a cap of 2: 'a' keeps id 0, 'b' and 'c' go to <unk>
	// id 1; "aaade" the same; "aab" with a cap of 3 has no <unk>.
	ab2 := file("ab2.txt", "aaabc", 2)
	ac2 := file("ac2.txt", "aaade", 2)
	ab3 := file("ab3.txt", "aab", 3)
	ac3 := file("ac3.txt", "aac", 3)
	abc := file("abc.txt", "abc", 3)
	synth, err := Load("synthetic:1KB", 13, 5)
	if err != nil {
		t.Fatal(err)
	}

	o := ab2.Origin()
	if o.Kind != "chars" || o.Vocab != 2 || o.Chars != "a\uFFFD" || o.Unk == nil || *o.Unk != 1 || o.Source != ab2.Source {
		t.Errorf("origin of %s: %+v", ab2.Source, o)
	}
	if s := synth.Origin(); s != (Origin{Source: "synthetic:1KB", Kind: "synthetic", Vocab: 13, Seed: 5}) {
		t.Errorf("synthetic origin %+v", s)
	}
	for _, d := range []*Dataset{ab2, ab3, synth} {
		if err := d.Origin().Validate(); err != nil {
			t.Errorf("%s: %v", d.Source, err)
		}
	}

	for _, c := range []struct {
		a, b *Dataset
		want string // "": the same ids
	}{
		{ab2, ac2, ""}, // what is not 'a' is <unk> in both
		{ab3, ab3, ""},
		{ab3, ac3, "1 of 2 ids differ; id 1 is 'b' in " + ab3.Source + ", 'c' in " + ac3.Source},
		{ab3, abc, "1 of 3 ids differ; id 2 is none in " + ab3.Source + ", 'c' in " + abc.Source},
		{ab2, ab3, "1 of 2 ids differ; id 1 is <unk> in " + ab2.Source + ", 'b' in " + ab3.Source},
		{synth, ab3, "synthetic:1KB is synthetic (vocabulary 13, seed 5), " + ab3.Source + " is a text of 2 characters: their ids mean different things"},
	} {
		err := c.a.Origin().SameIDs(c.b.Origin())
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s against %s: %v, want %q", c.a.Source, c.b.Source, err, c.want)
		}
	}

	unk := 5
	for _, bad := range []Origin{
		{Kind: "bpe", Vocab: 3},
		{Kind: "chars", Vocab: 3, Chars: "ab"},
		{Kind: "chars", Vocab: 2, Chars: "ab", Unk: &unk},
		{Kind: "synthetic", Vocab: 0},
		{Kind: "synthetic", Vocab: 3, Chars: "abc"},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v: valid", bad)
		}
	}
}
