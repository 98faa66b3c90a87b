package process

import (
	"bytes"
	"strings"
	"testing"

	"memprobe/internal/table"
	"memprobe/schema"
)

// pyLinesResult is a made-up Python run: the script's lines, one made
// through torch's code, pymalloc's arenas at pym bytes of the peak.
func pyLinesResult(pym int64) *schema.Result {
	st := &schema.Sites{RateBytes: 524288, PID: 77, PeakInUseBytes: 400 << 20, TopPeak: []schema.Site{}, TopExit: []schema.Site{}, TopTemporary: []schema.Site{},
		PyLines: &schema.SitesPyLines{PeakBytes: 400 << 20, ExitBytes: 100 << 20, LibraryPeakBytes: 60 << 20, NativePeakBytes: 128 << 20, PymallocPeakBytes: pym,
			Lines: []schema.SitesPyLine{
				{Function: "step", File: "/w/train.py", Line: 13, PeakBytes: 128 << 20, PeakBytesSE: 1 << 20, PeakPct: 32, Via: "Linear.forward (linear.py:114)"},
				{Function: "make_batches", File: "/w/train.py", Line: 8, PeakBytes: 22 << 20, PeakBytesSE: 1 << 20, PeakPct: 5.5, ExitBytes: 22 << 20, ExitPct: 22},
			}}}
	return &schema.Result{Kind: "process", Process: &schema.Process{Sites: st}}
}

// TestRenderPyLines: the table by line of the script comes before the
// sites, with its lines, shares and the library frame they went through;
// the pymalloc hint is said once where the arenas hold much of the peak,
// not otherwise.
func TestRenderPyLines(t *testing.T) {
	for _, f := range []table.Format{table.Text, table.Markdown} {
		var b bytes.Buffer
		if err := Render(&b, pyLinesResult(200<<20), f); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		i, j := strings.Index(out, "Python lines of the program's own code"), strings.Index(out, "Allocation sites")
		if i < 0 || j < 0 || i > j {
			t.Fatalf("want the table by line before the sites:\n%s", out)
		}
		for _, want := range []string{"train.py:13 step", "Linear.forward (linear.py:114)", "train.py:8 make_batches", "32.0", "60 MiB in stacks of library",
			"PYTHONMALLOC=malloc", "hold 200 MiB of the peak (50 %)"} {
			if !strings.Contains(out, want) {
				t.Errorf("%v: no %q in\n%s", f, want, out)
			}
		}
		if strings.Count(out, "PYTHONMALLOC") != 1 {
			t.Errorf("%v: the hint said %d times", f, strings.Count(out, "PYTHONMALLOC"))
		}
		if f == table.Text {
			t.Logf("\n%s", out[i:j])
		}
	}
	var b bytes.Buffer
	if err := Render(&b, pyLinesResult(10<<20), table.Text); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "PYTHONMALLOC") {
		t.Errorf("the hint at 2.5 %% of the peak in arenas:\n%s", b.String())
	}
	r := pyLinesResult(0)
	r.Process.Sites.PyLines = nil
	b.Reset()
	if err := Render(&b, r, table.Text); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "Python lines") {
		t.Errorf("a table by line without Python frames:\n%s", b.String())
	}
}
