package planfile

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Config is one phase at one point of the sweep grid: the command line
// and environment the runner starts, expanded.
type Config struct {
	// Phase is the phase's position in the plan (0 for the first).
	Phase int
	// Point is the swept variables' values (nil without a sweep).
	Point map[string]string
	// Command is the program and its arguments. A program named by a
	// relative path with a '/' is relative to the plan's Dir (Program).
	Command []string
	// Set are the variables the phase sets ("NAME=value", sorted);
	// Unset those it removes (sorted).
	Set, Unset []string
}

// Configs expands every phase over the sweep grid, phases in plan
// order, then the grid (the first swept variable varies slowest). vars
// gives the built-in variables' values ({probe}, {plan_dir}, {tmp}).
func (p *Plan) Configs(vars map[string]string) []Config {
	grid := Grid(p.Sweep)
	var out []Config
	for i, ph := range p.Phases {
		for _, point := range grid {
			val := p.values(vars, point)
			c := Config{Phase: i, Point: point, Command: Expand(ph.Command, val)}
			for k, v := range ph.Env {
				if v == "" {
					c.Unset = append(c.Unset, k)
				} else {
					c.Set = append(c.Set, k+"="+expand(v, val))
				}
			}
			slices.Sort(c.Set)
			slices.Sort(c.Unset)
			out = append(out, c)
		}
	}
	return out
}

// Program is the path to start for c's program: a relative path with a
// '/' joined to dir, as a shell in dir would find it; a bare name is
// looked up in PATH.
func (c Config) Program(dir string) string {
	prog := c.Command[0]
	if strings.Contains(prog, "/") && !filepath.IsAbs(prog) {
		return filepath.Join(dir, prog)
	}
	return prog
}

// SetupCommand is the plan's setup command expanded (nil: none).
func (p *Plan) SetupCommand(vars map[string]string) []string {
	if p.Setup == nil {
		return nil
	}
	return Expand(p.Setup, p.values(vars, nil))
}

// values are the variables' values at a sweep point: the built-ins, then
// [vars], then the point's.
func (p *Plan) values(vars, point map[string]string) map[string]string {
	val := map[string]string{VarPlanDir: p.Dir}
	for _, m := range []map[string]string{vars, p.Vars, point} {
		for k, v := range m {
			val[k] = v
		}
	}
	return val
}

// Environ is the child's environment: base (os.Environ() when nil)
// without the variables c sets or removes, then those it sets.
func (c Config) Environ(base []string) []string {
	if base == nil {
		base = os.Environ()
	}
	drop := map[string]bool{}
	for _, u := range c.Unset {
		drop[u] = true
	}
	for _, s := range c.Set {
		k, _, _ := strings.Cut(s, "=")
		drop[k] = true
	}
	var out []string
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if !drop[k] {
			out = append(out, kv)
		}
	}
	return append(out, c.Set...)
}

// Expand replaces each {name} of ss by its value in vals ({{ and }} are
// literal braces; a name without a value is left as it is, which Load
// has refused already).
func Expand(ss []string, vals map[string]string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = expand(s, vals)
	}
	return out
}

func expand(s string, vals map[string]string) string {
	return refRE.ReplaceAllStringFunc(s, func(m string) string {
		switch m {
		case "{{":
			return "{"
		case "}}":
			return "}"
		}
		if v, ok := vals[m[1:len(m)-1]]; ok {
			return v
		}
		return m
	})
}

// Grid is the cross product of the sweeps: one map of values per point,
// the first sweep varying slowest; one nil point without sweeps. probe
// run's built-in plans sweep with it too.
func Grid(sweeps []Sweep) []map[string]string {
	grid := []map[string]string{nil}
	for _, s := range sweeps {
		var next []map[string]string
		for _, g := range grid {
			for _, v := range s.Values {
				m := make(map[string]string, len(g)+1)
				maps.Copy(m, g)
				m[s.Name] = v
				next = append(next, m)
			}
		}
		grid = next
	}
	return grid
}
