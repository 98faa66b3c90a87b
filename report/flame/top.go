package flame

import (
	"cmp"
	"fmt"
	"io"
	"slices"

	"memprobe/internal/symname"
	"memprobe/internal/table"
)

// Func is one function's share of a graph, as pprof -top counts it: Flat
// is the value of the samples whose leaf it is, Cum of every sample whose
// stack holds it (once, however often it recurs on the stack).
type Func struct {
	Name      string
	Flat, Cum int64
}

// Funcs are g's functions by flat value, then cum, then name, largest
// first.
func Funcs(g *Graph) []Func {
	byName := map[string]*Func{}
	onPath := map[string]int{}
	var walk func(n *Node)
	walk = func(n *Node) {
		f := byName[n.Name]
		if f == nil {
			f = &Func{Name: n.Name}
			byName[n.Name] = f
		}
		f.Flat += n.Self
		if onPath[n.Name] == 0 {
			f.Cum += n.Value
		}
		onPath[n.Name]++
		for _, c := range n.Children {
			walk(c)
		}
		onPath[n.Name]--
	}
	for _, c := range g.Root.Children {
		walk(c)
	}
	out := make([]Func, 0, len(byName))
	for _, f := range byName {
		out = append(out, *f)
	}
	slices.SortFunc(out, func(a, b Func) int {
		if c := cmp.Compare(b.Flat, a.Flat); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Cum, a.Cum); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return out
}

// TopTable is the text view of g, as pprof -top: its n heaviest functions
// (all when n ≤ 0) by flat value, each with its flat and cum values and
// shares of the total and the running sum of the flat shares. Values are
// in g's unit: bytes in IEC units, nanoseconds as durations.
func TopTable(g *Graph, n int) *table.Table {
	fs := Funcs(g)
	total := g.Root.Value
	shown := fs
	if n > 0 && n < len(fs) {
		shown = fs[:n]
	}
	kind := table.Int
	switch g.Unit {
	case "bytes":
		kind = table.Bytes
	case "nanoseconds":
		kind = table.Duration
	}
	share := func(v int64) any {
		if total == 0 {
			return nil
		}
		return 100 * float64(v) / float64(total)
	}
	var flat int64
	for _, f := range shown {
		flat += f.Flat
	}
	t := table.New(fmt.Sprintf("%s: %d of %d functions, flat %s of %s total (%.1f %%)", g.SampleType, len(shown), len(fs),
		format(flat, g.Unit), format(total, g.Unit), pctOf(flat, total)),
		table.Column{Name: "flat", Kind: kind},
		table.Column{Name: "flat", Kind: table.Percent, Decimals: 2},
		table.Column{Name: "sum", Kind: table.Percent, Decimals: 2},
		table.Column{Name: "cum", Kind: kind},
		table.Column{Name: "cum", Kind: table.Percent, Decimals: 2},
		table.Column{Name: "function"},
	)
	var sum int64
	for _, f := range shown {
		sum += f.Flat
		// A C++ name as pprof shows it, templates collapsed (symname); the
		// functions are still told apart by their full names.
		t.Add(f.Flat, share(f.Flat), share(sum), f.Cum, share(f.Cum), symname.Short(f.Name))
	}
	if g.Skipped > 0 {
		s := "samples"
		if g.Skipped == 1 {
			s = "sample"
		}
		t.Note("%d %s of no positive %s left out", g.Skipped, s, g.SampleType)
	}
	return t
}

// WriteTop writes TopTable(g, n) to w in format f.
func WriteTop(w io.Writer, g *Graph, n int, f table.Format) error {
	return TopTable(g, n).Render(w, f)
}

func pctOf(v, total int64) float64 {
	if total == 0 {
		return 0
	}
	return 100 * float64(v) / float64(total)
}
