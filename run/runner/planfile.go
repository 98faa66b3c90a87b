package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"memprobe/run/planfile"
	"memprobe/schema"
)

// ProcessSpec is what a plan file's configuration starts: the program,
// its environment and its directory (planfile.Config, expanded), and the
// same as the report records it (RecordCommand, RecordEnv: the built-in
// {probe} and {tmp} left as they are, so that it names the configuration
// across runs and machines; schema.Run.Command and Env).
type ProcessSpec struct {
	planfile.Config
	Dir           string
	RecordCommand []string
	RecordEnv     map[string]string
}

// planFileConfigs lists a plan file's configurations: its phases in
// order (those o.Phases names, "after" the last unless a phase has that
// name, or all), each over the sweep grid of its variables.
func planFileConfigs(o Options) ([]Config, error) {
	p := o.PlanFile
	var phases []string // "after" is the last phase, as for the built-in plans
	for _, name := range o.Phases {
		if name == "after" && !slices.ContainsFunc(p.Phases, func(ph planfile.Phase) bool { return ph.Name == name }) {
			name = p.Phases[len(p.Phases)-1].Name
		}
		if !slices.ContainsFunc(p.Phases, func(ph planfile.Phase) bool { return ph.Name == name }) {
			return nil, fmt.Errorf("--phases: %s has no phase %q", p.Path, name)
		}
		phases = append(phases, name)
	}
	run := p.Configs(map[string]string{planfile.VarProbe: o.Executable, planfile.VarTmp: o.tmpOrPlaceholder()})
	rec := p.Configs(map[string]string{planfile.VarProbe: "{probe}", planfile.VarTmp: "{tmp}"})
	var out []Config
	for i, pc := range run {
		ph := p.Phases[pc.Phase]
		if len(phases) > 0 && !slices.Contains(phases, ph.Name) {
			continue
		}
		c := Config{
			Index: len(out), Name: p.Name + "-" + ph.Name, Plan: p.Name, Phase: ph.Name,
			Description: ph.Description, Claim: ph.Claim, Expect: slices.Clone(ph.Expect),
			Schema: schema.Config{Plan: p.Name, Phase: ph.Name}, PhaseIndex: pc.Phase,
		}
		for _, s := range p.Sweep {
			v := pc.Point[s.Name]
			c.Name += " " + s.Name + "=" + v
			if c.Sweep == nil {
				c.Sweep = map[string]string{}
			}
			c.Sweep[s.Name] = v
		}
		env := map[string]string{}
		for k, v := range ph.Env {
			if v == "" {
				env[k] = "" // removed
			}
		}
		for _, kv := range rec[i].Set {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
		if len(env) == 0 {
			env = nil
		}
		c.Process = &ProcessSpec{Config: pc, Dir: p.Dir, RecordCommand: rec[i].Command, RecordEnv: env}
		c.Scale = Scale{Why: planScale(p)}
		out = append(out, c)
	}
	return out, nil
}

// planScale is a plan file's configurations' scale, as the report
// records it: the file and its variables' values (the swept ones' as
// the sweep sets them).
func planScale(p *planfile.Plan) string {
	var vars []string
	for _, k := range slices.Sorted(maps.Keys(p.Vars)) {
		if !slices.ContainsFunc(p.Sweep, func(s planfile.Sweep) bool { return s.Name == k }) {
			vars = append(vars, k+"="+p.Vars[k])
		}
	}
	s := "plan file " + filepath.Base(p.Path)
	if len(vars) > 0 {
		s += ", " + strings.Join(vars, " ")
	}
	return s
}

// tmpOrPlaceholder is {tmp}'s value: the run's directory, or "{tmp}"
// where none exists (--dry-run).
func (o Options) tmpOrPlaceholder() string {
	if o.tmp == "" {
		return "{tmp}"
	}
	return o.tmp
}

// scaleString is a configuration's Run.Scale.
func (c Config) scaleString() string {
	if c.Process != nil {
		return c.Scale.Why
	}
	return c.Scale.String()
}

// identity names a configuration across runs: its name, its scale and,
// for a plan file's, its command and environment.
func (c Config) identity() string {
	k := resumeKey(c.Name, c.Schema)
	if c.Process != nil {
		k += "|" + processKey(c.Process.RecordCommand, c.Process.RecordEnv)
	}
	return k
}

// processKey is a plan file's run's command and environment in one
// string ("" for a built-in plan's).
func processKey(cmd []string, env map[string]string) string {
	if len(cmd) == 0 {
		return ""
	}
	s := strings.Join(cmd, "\x00")
	for _, k := range slices.Sorted(maps.Keys(env)) {
		s += "\x01" + k + "=" + env[k]
	}
	return s
}

// planDigest is the SHA-256 of the whole plan's configurations (before
// sharding): equal in every shard of one run.
func planDigest(cs []Config) string {
	h := sha256.New()
	for _, c := range cs {
		fmt.Fprintf(h, "%d\x00%s\x00%s\n", c.Index, c.identity(), c.scaleString())
	}
	return hex.EncodeToString(h.Sum(nil))
}

// planLabel names what a run's configurations come from, for a shard.
func planLabel(o Options, cs []Config) string {
	if o.PlanFile != nil {
		return "plan file " + o.PlanFile.Name
	}
	var plans []string
	for _, c := range cs {
		if !slices.Contains(plans, c.Plan) {
			plans = append(plans, c.Plan)
		}
	}
	return strings.Join(plans, ",")
}

// commandLine is the program's command line as a shell would read it,
// after its environment changes ("env -u A B=1 prog args").
func (p *ProcessSpec) commandLine() string {
	var parts []string
	if len(p.Unset) > 0 || len(p.Set) > 0 {
		parts = append(parts, "env")
		for _, u := range p.Unset {
			parts = append(parts, "-u", u)
		}
		for _, kv := range p.Set {
			parts = append(parts, quote(kv))
		}
	}
	for _, a := range p.Command {
		parts = append(parts, quote(a))
	}
	return strings.Join(parts, " ")
}

// quote quotes a word for a POSIX shell where it needs it.
func quote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`*?[]{}()<>|&;#~!") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
