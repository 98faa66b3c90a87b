package stats

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// knownMedians are the medians outside this package that TestOneMedian
// lets be, by "file:function", each with why. None today.
var knownMedians = map[string]bool{}

// TestOneMedian: no non-test file of the module outside this package
// computes a median or other statistics of its own: no function named
// for a median that takes a slice of numbers, no middle element of a
// slice (x[len(x)/2], x[n/2-1]), no import of benchmath.
func TestOneMedian(t *testing.T) {
	root := moduleRoot(t)
	found, err := medianSites(root, filepath.Join(root, "stats"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range found {
		if knownMedians[f.where] {
			seen[f.where] = true
			continue
		}
		t.Errorf("%s: %s: use memprobe/stats", f.pos, f.what)
	}
	for k := range knownMedians {
		if !seen[k] {
			t.Logf("%s computes no median now: take it out of knownMedians", k)
		}
	}
}

// TestOneMedianFinds plants each kind of median TestOneMedian looks for
// in a module of its own: every one is found, and a file that calls
// Median, a test file and the stats package itself are not.
func TestOneMedianFinds(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"go.mod":          "module m\n",
		"a/named.go":      "package a\n\nfunc medianOf(v []float64) float64 { return v[0] }\n",
		"a/upper.go":      "package a\n\nfunc upper(d []int64) int64 { return d[len(d)/2] }\n",
		"b/lower.go":      "package b\n\nfunc f(s []float64, n int) float64 { return s[n/2-1] }\n",
		"b/bench.go":      "package b\n\nimport \"golang.org/x/perf/benchmath\"\n\nvar _ = benchmath.AssumeNothing\n",
		"c/uses.go":       "package c\n\nimport \"memprobe/stats\"\n\nfunc peakMedian(v []float64) float64 { return stats.Median(v) }\n",
		"c/c_test.go":     "package c\n\nfunc median(v []float64) float64 { return v[len(v)/2] }\n",
		"stats/median.go": "package stats\n\nfunc Median(v []float64) float64 { return v[len(v)/2] }\n",
	}
	for name, src := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	found, err := medianSites(root, filepath.Join(root, "stats"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range found {
		got = append(got, f.where+" "+f.what)
	}
	want := []string{
		"a/named.go:medianOf a median function (medianOf takes a slice of numbers)",
		"a/upper.go:upper the middle element of a slice",
		"b/bench.go: benchmath imported",
		"b/lower.go:f the middle element of a slice",
	}
	if !slices.Equal(got, want) {
		t.Errorf("found\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}

// site is a median computed outside package stats: where is
// "file:function" (slash-separated, from the module root), pos the line.
type site struct {
	where, pos, what string
}

// medianSites parses every non-test .go file under root but those under
// skip (and testdata, hidden directories) and lists the medians it finds,
// in file order.
func medianSites(root, skip string) ([]site, error) {
	var out []site
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == skip || (path != root && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") || d.Name() == "vendor")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return fmt.Errorf("parsing %s: %w", path, err)
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		add := func(fn string, at token.Pos, what string) {
			out = append(out, site{where: rel + ":" + fn, pos: fset.Position(at).String(), what: what})
		}
		for _, im := range f.Imports {
			if im.Path.Value == `"golang.org/x/perf/benchmath"` {
				add("", im.Pos(), "benchmath imported")
			}
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok {
				continue
			}
			name := fd.Name.Name
			if strings.Contains(strings.ToLower(name), "median") && takesNumbers(fd) && !callsStats(fd) {
				add(name, fd.Pos(), fmt.Sprintf("a median function (%s takes a slice of numbers)", name))
			}
			if fd.Body == nil {
				continue
			}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				if ix, ok := n.(*ast.IndexExpr); ok && isMiddle(ix.Index) {
					add(name, ix.Pos(), "the middle element of a slice")
				}
				return true
			})
		}
		return nil
	})
	return out, err
}

// takesNumbers says whether a parameter of fd is a slice of numbers.
func takesNumbers(fd *ast.FuncDecl) bool {
	for _, p := range fd.Type.Params.List {
		at, ok := p.Type.(*ast.ArrayType)
		if !ok || at.Len != nil {
			continue
		}
		switch e := at.Elt.(type) {
		case *ast.Ident:
			if numberTypes[e.Name] {
				return true
			}
		case *ast.SelectorExpr:
			if x, ok := e.X.(*ast.Ident); ok && x.Name == "time" && e.Sel.Name == "Duration" {
				return true
			}
		}
	}
	return false
}

var numberTypes = map[string]bool{
	"float64": true, "float32": true, "int": true, "int64": true, "int32": true,
	"uint": true, "uint64": true, "uint32": true,
}

// callsStats says whether fd calls into package stats (an accessor
// named for the median it reads).
func callsStats(fd *ast.FuncDecl) bool {
	calls := false
	if fd.Body != nil {
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == "stats" {
					calls = true
				}
			}
			return !calls
		})
	}
	return calls
}

// isMiddle says whether an index is a middle one: e/2, e/2-1, e>>1.
func isMiddle(e ast.Expr) bool {
	e = ast.Unparen(e)
	b, ok := e.(*ast.BinaryExpr)
	if !ok {
		return false
	}
	if b.Op == token.SUB || b.Op == token.ADD {
		return isMiddle(b.X)
	}
	lit, ok := ast.Unparen(b.Y).(*ast.BasicLit)
	return ok && ((b.Op == token.QUO && lit.Value == "2") || (b.Op == token.SHR && lit.Value == "1"))
}

// moduleRoot is the directory of the module's go.mod, above this one.
func moduleRoot(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = up
	}
}
