// Package flame turns a pprof profile into a flame graph: a tree of frames
// merged by function name along the stack (Build), optionally compared with
// a base profile (Diff), and drawn as a self-contained interactive SVG
// (WriteSVG). It sits beside report/: it reads profiles, never the trainer.
//
// The pipeline is: profile → Build (one sample type, root-to-leaf stacks) →
// Diff (base values matched by path) → WriteSVG (layout, colours, script).
package flame

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/google/pprof/profile"
)

// Node is one frame of the tree: a function reached by one path of
// function names from the root.
type Node struct {
	// Name is the function name ("root" for the root; a location without
	// symbols is named by its address).
	Name string
	// Value is the sum of the sample values of every stack through this
	// frame (self and descendants); Self the part that ends here.
	Value, Self int64
	// Base is, in a differential graph, the base profile's Value for the
	// same path of names (0 when the base has no such path); HasBase says
	// whether the Graph is differential.
	Base int64
	// Children are sorted by name, never nil.
	Children []*Node
}

// Graph is a flame graph of one sample type.
type Graph struct {
	Root *Node
	// SampleType and Unit name the value drawn ("inuse_space", "bytes").
	SampleType, Unit string
	// Diff is true for a differential graph (Diff): every Node's Base is
	// set.
	Diff bool
	// BaseTotal is the base profile's total in a differential graph.
	BaseTotal int64
	// Skipped counts samples left out because their value was not
	// positive (a flame graph draws widths).
	Skipped int
}

// SampleIndex finds the sample type named name in p ("" means the
// profile's default sample type, else its last one, as pprof does).
func SampleIndex(p *profile.Profile, name string) (int, error) {
	if len(p.SampleType) == 0 {
		return 0, fmt.Errorf("profile has no sample types")
	}
	if name == "" {
		name = p.DefaultSampleType
		if name == "" {
			return len(p.SampleType) - 1, nil
		}
	}
	var have []string
	for i, st := range p.SampleType {
		if st.Type == name {
			return i, nil
		}
		have = append(have, st.Type)
	}
	return 0, fmt.Errorf("profile has no sample type %q (it has %s)", name, strings.Join(have, ", "))
}

// Build merges p's samples of sample type index i into a tree, the root
// first and the leaf last along each stack. Inlined frames are frames of
// their own. Samples whose value is not positive are counted in Skipped.
func Build(p *profile.Profile, i int) (*Graph, error) {
	if i < 0 || i >= len(p.SampleType) {
		return nil, fmt.Errorf("sample index %d out of range [0, %d)", i, len(p.SampleType))
	}
	g := &Graph{Root: &Node{Name: "root", Children: []*Node{}}, SampleType: p.SampleType[i].Type, Unit: p.SampleType[i].Unit}
	// Children are found through a map while building, then sorted.
	kids := map[*Node]map[string]*Node{}
	child := func(n *Node, name string) *Node {
		m := kids[n]
		if m == nil {
			m = map[string]*Node{}
			kids[n] = m
		}
		c := m[name]
		if c == nil {
			c = &Node{Name: name, Children: []*Node{}}
			m[name] = c
			n.Children = append(n.Children, c)
		}
		return c
	}
	var stack []string
	for _, s := range p.Sample {
		if i >= len(s.Value) || s.Value[i] <= 0 {
			g.Skipped++
			continue
		}
		v := s.Value[i]
		stack = Stack(s, stack[:0])
		n := g.Root
		n.Value += v
		for _, name := range stack {
			n = child(n, name)
			n.Value += v
		}
		n.Self += v
	}
	sortTree(g.Root)
	return g, nil
}

// Stack appends the function names of s's stack to dst, root first: pprof
// stores the leaf first, and within a location the innermost inlined
// function first.
func Stack(s *profile.Sample, dst []string) []string {
	for j := len(s.Location) - 1; j >= 0; j-- {
		loc := s.Location[j]
		if loc == nil {
			continue
		}
		if len(loc.Line) == 0 {
			dst = append(dst, fmt.Sprintf("0x%x", loc.Address))
			continue
		}
		for k := len(loc.Line) - 1; k >= 0; k-- {
			name := "?"
			if f := loc.Line[k].Function; f != nil && f.Name != "" {
				name = f.Name
			}
			dst = append(dst, name)
		}
	}
	return dst
}

func sortTree(n *Node) {
	slices.SortFunc(n.Children, func(a, b *Node) int { return cmp.Compare(a.Name, b.Name) })
	for _, c := range n.Children {
		sortTree(c)
	}
}

// Diff returns head's graph with every frame's Base set from base's frame
// at the same path of names. Both must be of the same sample type. Frames
// only in base are not drawn (the graph has HEAD's shape); their parents'
// Base still counts them.
func Diff(base, head *Graph) (*Graph, error) {
	if base.SampleType != head.SampleType {
		return nil, fmt.Errorf("base sample type %q differs from head's %q", base.SampleType, head.SampleType)
	}
	g := *head
	g.Root = diffNode(base.Root, head.Root)
	g.Diff = true
	g.BaseTotal = base.Root.Value
	return &g, nil
}

func diffNode(b, h *Node) *Node {
	n := &Node{Name: h.Name, Value: h.Value, Self: h.Self, Children: make([]*Node, len(h.Children))}
	if b != nil {
		n.Base = b.Value
	}
	for i, c := range h.Children {
		var bc *Node
		if b != nil {
			if j, ok := slices.BinarySearchFunc(b.Children, c.Name, func(x *Node, name string) int { return cmp.Compare(x.Name, name) }); ok {
				bc = b.Children[j]
			}
		}
		n.Children[i] = diffNode(bc, c)
	}
	return n
}

// Package is the package path of a Go function name
// ("memprobe/trainer/model.(*Model).Forward" → "memprobe/trainer/model"),
// or the name itself when it has none.
func Package(name string) string {
	start := strings.LastIndexByte(name, '/') + 1
	if dot := strings.IndexByte(name[start:], '.'); dot > 0 {
		return name[:start+dot]
	}
	return name
}
