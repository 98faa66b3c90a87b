package flame

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"math"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"memprobe/internal/golden"
	"memprobe/internal/table"
)

// stack is one synthetic sample: function names root first, and its
// alloc_space and inuse_space values. A name "a+b" is one location with b
// inlined into a.
type stack struct {
	names        []string
	alloc, inuse int64
}

var headStacks = []stack{
	{[]string{"main.main", "memprobe/trainer.(*Trainer).Step", "memprobe/trainer/model.Forward"}, 900, 600},
	{[]string{"main.main", "memprobe/trainer.(*Trainer).Step", "memprobe/trainer/model.Forward+runtime.mallocgc"}, 300, 200},
	{[]string{"main.main", "memprobe/trainer.(*Trainer).Step"}, 100, 100},
	{[]string{"main.main", "main.load", "bytes.growSlice"}, 400, 100},
}

var baseStacks = []stack{
	{[]string{"main.main", "memprobe/trainer.(*Trainer).Step", "memprobe/trainer/model.Forward"}, 500, 400},
	{[]string{"main.main", "memprobe/trainer.(*Trainer).Step", "memprobe/trainer/model.Forward+runtime.mallocgc"}, 400, 300},
	{[]string{"main.main", "memprobe/trainer.(*Trainer).Step"}, 100, 100},
	{[]string{"main.main", "main.load", "bytes.growSlice"}, 100, 100},
	{[]string{"main.main", "main.old"}, 50, 50},
}

// synthetic builds a heap-like profile of the stacks, encoded and parsed
// back as a file would be.
func synthetic(t testing.TB, stacks []stack) (*profile.Profile, []byte) {
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "alloc_space", Unit: "bytes"}, {Type: "inuse_space", Unit: "bytes"}},
		PeriodType: &profile.ValueType{Type: "space", Unit: "bytes"},
		Period:     1,
	}
	funcs := map[string]*profile.Function{}
	fn := func(name string) *profile.Function {
		if f := funcs[name]; f != nil {
			return f
		}
		f := &profile.Function{ID: uint64(len(p.Function) + 1), Name: name, SystemName: name}
		funcs[name] = f
		p.Function = append(p.Function, f)
		return f
	}
	locs := map[string]*profile.Location{}
	for _, s := range stacks {
		var ls []*profile.Location
		for _, frame := range s.names {
			loc := locs[frame]
			if loc == nil {
				loc = &profile.Location{ID: uint64(len(p.Location) + 1), Address: uint64(0x1000 * (len(p.Location) + 1))}
				parts := strings.Split(frame, "+")
				for k := len(parts) - 1; k >= 0; k-- { // innermost first
					loc.Line = append(loc.Line, profile.Line{Function: fn(parts[k]), Line: int64(10 + k)})
				}
				locs[frame] = loc
				p.Location = append(p.Location, loc)
			}
			ls = append([]*profile.Location{loc}, ls...) // leaf first
		}
		p.Sample = append(p.Sample, &profile.Sample{Location: ls, Value: []int64{s.alloc, s.inuse}})
	}
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	q, err := profile.ParseData(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return q, buf.Bytes()
}

func build(t *testing.T, stacks []stack, sample string) *Graph {
	t.Helper()
	p, _ := synthetic(t, stacks)
	i, err := SampleIndex(p, sample)
	if err != nil {
		t.Fatal(err)
	}
	g, err := Build(p, i)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestBuild(t *testing.T) {
	g := build(t, headStacks, "inuse_space")
	want := map[string][2]int64{ // name → value, self
		"root": {1000, 0}, "main.main": {1000, 0}, "memprobe/trainer.(*Trainer).Step": {900, 100},
		"memprobe/trainer/model.Forward": {800, 600}, "runtime.mallocgc": {200, 200},
		"main.load": {100, 0}, "bytes.growSlice": {100, 100},
	}
	got := map[string][2]int64{}
	var walk func(n *Node)
	walk = func(n *Node) {
		got[n.Name] = [2]int64{n.Value, n.Self}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(g.Root)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: value, self %v, want %v", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("frames %v, want %v", got, want)
	}
	if g.Root.Children[0].Children[0].Name != "main.load" {
		t.Errorf("children not in name order: %s first", g.Root.Children[0].Children[0].Name)
	}
	p, _ := synthetic(t, headStacks)
	if _, err := SampleIndex(p, "cpu"); err == nil || !strings.Contains(err.Error(), "alloc_space, inuse_space") {
		t.Errorf("unknown sample type: %v", err)
	}
	if i, _ := SampleIndex(p, ""); i != 1 {
		t.Errorf("default sample index %d, want the last, 1", i)
	}
}

func TestPackage(t *testing.T) {
	for in, want := range map[string]string{
		"memprobe/trainer/model.(*Model).Forward":   "memprobe/trainer/model",
		"runtime.mallocgc":                          "runtime",
		"gonum.org/v1/gonum/blas/gonum.dgemmSerial": "gonum.org/v1/gonum/blas/gonum",
		"0x4a1f": "0x4a1f",
	} {
		if got := Package(in); got != want {
			t.Errorf("Package(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestLabel: a label that does not fit keeps the function name, dropping
// the package's directory, then the package, then cutting from the left.
func TestLabel(t *testing.T) {
	const name = "memprobe/trainer/model.(*Model).attentionBackward.func1"
	for _, c := range []struct {
		width float64
		want  string
	}{
		{1000, name},
		{6 + 40.5*charW, "model.(*Model).attentionBackward.func1"},
		{6 + 37.5*charW, "(*Model).attentionBackward.func1"},
		{6 + 20.5*charW, "..tionBackward.func1"},
		{6 + 3.5*charW, "..1"},
		{6 + 2.5*charW, ""},
	} {
		if got := label(name, c.width); got != c.want {
			t.Errorf("label(%d characters) = %q, want %q", int((c.width-6)/charW), got, c.want)
		}
	}
	for _, c := range []struct {
		width float64
		name  string
		want  string
	}{
		{6 + 10.5*charW, "runtime.mallocgc", "mallocgc"},
		{6 + 6.5*charW, "0x4a1f", "0x4a1f"},
		{6 + 5.5*charW, "0x4a1f", "..a1f"},
		{6 + 30.5*charW, "gonum.org/v1/gonum/blas/gonum.dgemmSerial", "gonum.dgemmSerial"},
		// C++ (cc1's frames read "..ong)" before): the name without its
		// arguments and templates (the full name is the tooltip's), then
		// its class and method, then its method, then its method's end.
		{6 + 40.5*charW, "make_node(tree_code)", "make_node"},
		{6 + 12.5*charW, "make_node(tree_code)", "make_node"},
		{6 + 7.5*charW, "make_node(tree_code)", ".._node"},
		{6 + 40.5*charW, "v8::internal::Heap::AllocateRaw(int, v8::internal::AllocationType)", "v8::internal::Heap::AllocateRaw"},
		{6 + 20.5*charW, "v8::internal::Heap::AllocateRaw(int, v8::internal::AllocationType)", "Heap::AllocateRaw"},
		{6 + 12.5*charW, "v8::internal::Heap::AllocateRaw(int, v8::internal::AllocationType)", "AllocateRaw"},
		{6 + 8.5*charW, "v8::internal::Heap::AllocateRaw(int, v8::internal::AllocationType)", "..ateRaw"},
	} {
		if got := label(c.name, c.width); got != c.want {
			t.Errorf("label(%q, %d characters) = %q, want %q", c.name, int((c.width-6)/charW), got, c.want)
		}
	}
}

func svgOf(t *testing.T, g *Graph) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteSVG(&buf, g, Options{Title: "synthetic"}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestGolden(t *testing.T) {
	head := build(t, headStacks, "inuse_space")
	golden.Check(t, "flame-inuse_space.svg", svgOf(t, head))
	base := build(t, baseStacks, "inuse_space")
	d, err := Diff(base, head)
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "flame-diff-inuse_space.svg", svgOf(t, d))
}

// frame is one drawn frame read back from the SVG.
type frame struct {
	name, tip string
	x, width  float64
	fill      string
}

// frames parses the SVG as XML (so it must be well formed) and returns its
// frames.
func frames(t *testing.T, svg []byte) []frame {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(svg))
	var out []frame
	var cur *frame
	inTitle := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			attr := map[string]string{}
			for _, a := range e.Attr {
				attr[a.Name.Local] = a.Value
			}
			switch {
			case e.Name.Local == "g" && attr["class"] == "f":
				out = append(out, frame{})
				cur = &out[len(out)-1]
			case e.Name.Local == "title" && cur != nil:
				inTitle = true
			case e.Name.Local == "rect" && cur != nil:
				cur.x, _ = strconv.ParseFloat(attr["x"], 64)
				cur.width, _ = strconv.ParseFloat(attr["width"], 64)
				cur.fill = attr["fill"]
			}
		case xml.CharData:
			if inTitle {
				cur.tip += string(e)
			}
		case xml.EndElement:
			switch e.Name.Local {
			case "title":
				inTitle = false
				cur.name, _, _ = strings.Cut(cur.tip, "\n")
			case "g":
				cur = nil
			}
		}
	}
	return out
}

// TestStructure: each frame's width is its value's share of the root's
// width within a pixel, and the root spans the full width.
func TestStructure(t *testing.T) {
	values := map[string]float64{"root": 1000, "main.main": 1000, "memprobe/trainer.(*Trainer).Step": 900,
		"memprobe/trainer/model.Forward": 800, "runtime.mallocgc": 200, "main.load": 100, "bytes.growSlice": 100}
	fs := frames(t, svgOf(t, build(t, headStacks, "inuse_space")))
	if len(fs) != len(values) {
		t.Fatalf("%d frames drawn, want %d", len(fs), len(values))
	}
	for _, f := range fs {
		want := values[f.name] / 1000 * Width
		if math.Abs(f.width-want) > 1 {
			t.Errorf("%s: width %.2f, want %.2f", f.name, f.width, want)
		}
		if f.name == "root" && (f.x != Pad || f.width != Width) {
			t.Errorf("root spans [%.2f, +%.2f], want [%d, +%d]", f.x, f.width, Pad, Width)
		}
	}
}

// TestDiff: the differential graph has the head's shape; each tooltip
// gives both values and the change; growth is red, shrinkage blue.
func TestDiff(t *testing.T) {
	head := build(t, headStacks, "inuse_space")
	base := build(t, baseStacks, "inuse_space")
	d, err := Diff(base, head)
	if err != nil {
		t.Fatal(err)
	}
	fs := frames(t, svgOf(t, d))
	if len(fs) != 7 {
		t.Fatalf("%d frames, want the head's 7", len(fs))
	}
	byName := map[string]frame{}
	for _, f := range fs {
		byName[f.name] = f
	}
	if _, ok := byName["main.old"]; ok {
		t.Error("a frame only in the base is drawn")
	}
	for name, want := range map[string]string{
		"memprobe/trainer/model.Forward": "head 800 B, base 700 B, change +100 B (14.3%)",
		"runtime.mallocgc":               "head 200 B, base 300 B, change -100 B (-33.3%)",
		"bytes.growSlice":                "head 100 B, base 100 B, change 0 B (0.0%)",
		"root":                           "head 1000 B, base 950 B, change +50 B (5.3%)",
	} {
		if !strings.Contains(byName[name].tip, want) {
			t.Errorf("%s: tooltip %q, want %q", name, byName[name].tip, want)
		}
	}
	red := func(c string) bool { return c[1:3] > c[5:7] }
	if f := byName["memprobe/trainer/model.Forward"]; !red(f.fill) {
		t.Errorf("grown frame coloured %s, want red", f.fill)
	}
	if f := byName["runtime.mallocgc"]; red(f.fill) || f.fill[5:7] <= f.fill[1:3] {
		t.Errorf("shrunk frame coloured %s, want blue", f.fill)
	}
	if _, err := Diff(build(t, baseStacks, "alloc_space"), head); err == nil {
		t.Error("diff of different sample types: no error")
	}
}

// FuzzBuild: no parsed profile makes the builder or the writer panic.
func FuzzBuild(f *testing.F) {
	_, data := synthetic(f, headStacks)
	f.Add(data)
	_, data = synthetic(f, baseStacks)
	f.Add(data)
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := profile.ParseData(data)
		if err != nil {
			return
		}
		for i := range p.SampleType {
			g, err := Build(p, i)
			if err != nil {
				t.Fatal(err)
			}
			WriteSVG(io.Discard, g, Options{})
			d, err := Diff(g, g)
			if err != nil {
				t.Fatal(err)
			}
			WriteSVG(io.Discard, d, Options{})
		}
	})
}

// TestLabelScript: the script's lab, which relabels frames on zoom from
// the forms WriteSVG puts in data-l, cuts names as label does (run with
// node when it is installed).
func TestLabelScript(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node to run the script")
	}
	var fns []string
	for _, l := range strings.Split(script, "\n") {
		if strings.HasPrefix(l, "function lab(") || strings.HasPrefix(l, "var W=") {
			fns = append(fns, l)
		}
	}
	if len(fns) != 2 {
		t.Fatalf("the script's lab and constants: found %d of 2 lines", len(fns))
	}
	names := []string{"memprobe/trainer/model.(*Model).attentionBackward.func1", "runtime.mallocgc",
		"gonum.org/v1/gonum/blas/gonum.dgemmSerial", "0x4a1f", "main.main",
		"std::vector<std::string, std::allocator<std::string> >::_M_realloc_insert<std::string const&>(std::string*, std::string const&)",
		"make_node(tree_code)"}
	type c struct {
		Name  string   `json:"-"`
		Forms []string `json:"f"`
		Width float64  `json:"w"`
	}
	var cases []c
	for _, n := range names {
		for k := 0; k <= 60; k++ {
			cases = append(cases, c{n, ShortNames(n), 6 + (float64(k)+0.5)*charW})
		}
	}
	in, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	// var W=... declares the script's constants; its frame list is stubbed.
	prog := "var document={querySelectorAll:function(){return []}};\n" + strings.Join(fns, "\n") +
		"\nconsole.log(JSON.stringify(" + string(in) + ".map(function(c){return lab(c.f,c.w)})));"
	out, err := exec.Command(node, "-e", prog).Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var got []string
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("node wrote %q: %v", out, err)
	}
	if len(got) != len(cases) {
		t.Fatalf("%d labels from the script for %d cases", len(got), len(cases))
	}
	for i, c := range cases {
		if want := label(c.Name, c.Width); got[i] != want {
			t.Errorf("script lab(%q, %.1f) = %q, label gives %q", c.Name, c.Width, got[i], want)
		}
	}
}

// TestTop: the text view lists functions by flat value with pprof's
// columns; a function recurring on a stack counts once in its cum.
func TestTop(t *testing.T) {
	g := build(t, append(slices.Clone(headStacks), stack{[]string{"main.main", "a.rec", "a.rec", "a.rec+a.leaf"}, 50, 50}), "inuse_space")
	var buf bytes.Buffer
	if err := WriteTop(&buf, g, 4, table.Text); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "top-inuse_space.txt", buf.Bytes())
	got := map[string]Func{}
	for _, f := range Funcs(g) {
		got[f.Name] = f
	}
	for _, want := range []Func{
		{"memprobe/trainer/model.Forward", 600, 800},
		{"a.rec", 0, 50}, // on the stack three times, counted once
		{"a.leaf", 50, 50},
		{"main.main", 0, 1050},
	} {
		if got[want.Name] != want {
			t.Errorf("%s: %+v, want %+v", want.Name, got[want.Name], want)
		}
	}
	if len(got) != 8 {
		t.Errorf("%d functions, want 8: %v", len(got), got)
	}
}
