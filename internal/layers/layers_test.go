package layers

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// foundations are the folders every layer above internal/ may use: the
// result format, its metrics and statistics, and the ledger of buffers.
var foundations = []string{"schema", "metric", "stats", "ledger"}

// A layer is a top-level folder and the other folders of the module its
// packages may import (its own folder and internal/ always).
type layer struct {
	folder string
	may    []string
}

// layers are the top-level folders from the top down, as
// docs/architecture.md lists them (TestDocLayers); scripts/, tools beside
// the program, comes last.
var layers = []layer{
	{"cmd", append([]string{"run", "report", "trainer", "instrument", "outside"}, foundations...)},
	{"run", append([]string{"trainer", "instrument", "outside"}, foundations...)},
	{"report", foundations},
	{"outside", append([]string{"instrument"}, foundations...)},
	{"instrument", foundations},
	{"trainer", []string{"ledger"}},
	{"ledger", nil},
	{"stats", nil},
	{"metric", []string{"schema"}},
	{"schema", nil},
	{"internal", nil},
	{"scripts", nil},
}

// allowed is layers by folder.
var allowed = func() map[string][]string {
	m := map[string][]string{}
	for _, l := range layers {
		m[l.folder] = l.may
	}
	return m
}()

// folder is the top-level folder of a module package path, or "".
func folder(p string) string {
	rest, ok := strings.CutPrefix(p, "memprobe/")
	if !ok {
		return ""
	}
	f, _, _ := strings.Cut(rest, "/")
	return f
}

// TestLayers checks, for every package of the module, that its
// dependencies respect the layers of the package comment.
func TestLayers(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH: cannot list dependencies")
	}
	for _, tags := range []string{"", "openblas", "cuda", "viz"} {
		out, err := exec.Command(goBin, "list", "-tags="+tags, "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, "memprobe/...").CombinedOutput()
		if err != nil {
			t.Fatalf("go list -tags=%q: %v\n%s", tags, err, out)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			f := strings.Fields(line)
			pkg, deps := f[0], f[1:]
			if _, ok := allowed[folder(pkg)]; !ok {
				t.Errorf("tags %q: %s: folder %s/ has no place in the layers", tags, pkg, folder(pkg))
			}
			for _, d := range deps {
				if why := violation(pkg, d); why != "" {
					t.Errorf("tags %q: %s depends on %s: %s", tags, pkg, d, why)
				}
			}
		}
	}
}

// violation says why pkg may not depend on dep, or "".
func violation(pkg, dep string) string {
	from, to := folder(pkg), folder(dep)
	if to == "" {
		return "" // the standard library or another module
	}
	may, ok := allowed[from]
	if !ok {
		return "folder " + from + "/ has no place in the layers (internal/layers)"
	}
	if to == from || (to == "internal" && from != "internal") {
		return ""
	}
	for _, a := range may {
		if to == a {
			return ""
		}
	}
	return from + "/ may import only " + strings.Join(append([]string{"internal"}, may...), ", ")
}

// TestViolationCatches: the rules can fail, and allow what the layers allow.
func TestViolationCatches(t *testing.T) {
	for _, c := range [][2]string{
		{"memprobe/trainer", "memprobe/instrument/allocsite"},
		{"memprobe/trainer/tape", "memprobe/schema"},
		{"memprobe/instrument/reconcile", "memprobe/trainer/model"},
		{"memprobe/instrument/reconcile", "memprobe/outside"},
		{"memprobe/report", "memprobe/run/job"},
		{"memprobe/report", "memprobe/instrument/memmodel"},
		{"memprobe/report/memplot", "memprobe/instrument/sampler"},
		{"memprobe/run/runner", "memprobe/report"},
		{"memprobe/outside", "memprobe/trainer"},
		{"memprobe/run/job", "memprobe/cmd/probe"},
		{"memprobe/internal/table", "memprobe/schema"},
		{"memprobe/newfolder/x", "memprobe/schema"},
	} {
		if violation(c[0], c[1]) == "" {
			t.Errorf("%s → %s allowed", c[0], c[1])
		}
	}
	for _, c := range [][2]string{
		{"memprobe/trainer", "memprobe/ledger"},
		{"memprobe/run/job", "memprobe/trainer"},
		{"memprobe/report", "memprobe/schema"},
		{"memprobe/outside", "memprobe/instrument/reconcile"},
		{"memprobe/outside", "memprobe/outside/sites"},
		{"memprobe/cmd/probe", "memprobe/run/job"},
		{"memprobe/internal/fakecuda", "memprobe/internal/dl"},
		{"memprobe/trainer/device", "memprobe/internal/dl"},
		{"memprobe/report", "fmt"},
	} {
		if why := violation(c[0], c[1]); why != "" {
			t.Errorf("%s → %s refused: %s", c[0], c[1], why)
		}
	}
}

// TestDocLayers: docs/architecture.md's layer list (the "- `folder/`"
// lines of its "Layers" section) names the folders of the table above, in
// the same order, and no other: the document cannot drift from the rule.
func TestDocLayers(t *testing.T) {
	const path = "../../docs/architecture.md"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got := docLayers(string(b))
	var want []string
	for _, l := range layers {
		want = append(want, l.folder)
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s lists the layers %q; internal/layers has %q", path, got, want)
	}
}

// docLayers returns the folders of the "## Layers" section's list, one
// "- `folder/`" per line, in order.
func docLayers(doc string) []string {
	_, sec, ok := strings.Cut(doc, "\n## Layers\n")
	if !ok {
		return nil
	}
	if i := strings.Index(sec, "\n## "); i >= 0 {
		sec = sec[:i]
	}
	var out []string
	for _, l := range strings.Split(sec, "\n") {
		if rest, ok := strings.CutPrefix(l, "- `"); ok {
			if f, _, ok := strings.Cut(rest, "/`"); ok {
				out = append(out, f)
			}
		}
	}
	return out
}

// TestDocLayersParse: the parser reads the list and only the list.
func TestDocLayersParse(t *testing.T) {
	doc := "# A\n\n- `x/`: no\n\n## Layers\n\ntext `y/`\n\n- `cmd/`: top\n- `internal/`: helpers\n  - `nested/` no\n\n## Next\n\n- `z/`: no\n"
	if got, want := docLayers(doc), []string{"cmd", "internal"}; !slices.Equal(got, want) {
		t.Errorf("docLayers: %q, want %q", got, want)
	}
	if got := docLayers("# no layers\n- `cmd/`\n"); got != nil {
		t.Errorf("docLayers without the section: %q, want none", got)
	}
}
