// Package planfile reads a plan file: the phases of a user's own program,
// each a command line with its environment, that `probe run --plan-file`
// runs as it runs the built-in plans (fresh children, repetitions, the
// claims checked).
//
// Its place in the pipeline is before the runner: Load parses the TOML
// (github.com/BurntSushi/toml, strictly: an unknown field is an error),
// checks every field and every {var}, and applies the --sweep overrides;
// Configs expands the phases over the sweep grid into the command lines
// the runner starts. Everything wrong with a plan file is found by Load,
// before any child starts, and said as "FILE:LINE: what is wrong".
// docs/run.md has the format.
package planfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"memprobe/metric"
	"memprobe/schema"
)

// MaxCount bounds a plan's count, as the runner bounds --count.
const MaxCount = 1000

// Builtin variables: their values come from the run, not from [vars].
const (
	VarProbe   = "probe"    // the probe binary that runs the plan
	VarPlanDir = "plan_dir" // the plan file's directory, absolute
	VarTmp     = "tmp"      // a directory of the run's, removed after it
)

var builtins = []string{VarProbe, VarPlanDir, VarTmp}

// Plan is a plan file, checked.
type Plan struct {
	// Path is the file as given; Dir is the workdir, absolute (the plan
	// file's directory joined with its workdir).
	Path string
	Dir  string
	// Name and Description are the plan's; Count its repetitions (0: not
	// given).
	Name        string
	Description string
	Count       int
	// Setup runs once in Dir before any phase, unmeasured (nil: none).
	Setup []string
	// Vars are the variables' values: [vars], with each swept one's first
	// value; Sweep the swept variables in the order given.
	Vars   map[string]string
	Sweep  []Sweep
	Phases []Phase
}

// Phase is one [[phase]].
type Phase struct {
	Name, Description, Claim string
	// Command and Env are templates: {var} is replaced per configuration.
	// An Env value "" removes the variable from the child's environment.
	Command []string
	Env     map[string]string
	Expect  []schema.Expectation
	// Line is the line of the phase's [[phase]] header.
	Line int
}

// Sweep is one --sweep NAME=V1,V2,... of a plan variable.
type Sweep struct {
	Name   string
	Values []string
}

// Error is a plan file's error at a line (0: the file as a whole).
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return e.File + ": " + e.Msg
}

// The file as decoded; Undecoded keys are unknown fields.
type fileTOML struct {
	Name        string         `toml:"name"`
	Description string         `toml:"description"`
	Count       *int64         `toml:"count"`
	Workdir     string         `toml:"workdir"`
	Setup       []string       `toml:"setup"`
	Vars        map[string]any `toml:"vars"`
	Phase       []phaseTOML    `toml:"phase"`
}

type phaseTOML struct {
	Name        string         `toml:"name"`
	Description string         `toml:"description"`
	Command     []string       `toml:"command"`
	Env         map[string]any `toml:"env"`
	Claim       string         `toml:"claim"`
	Expect      []expectTOML   `toml:"expect"`
}

type expectTOML struct {
	Metric string `toml:"metric"`
	Change string `toml:"change"`
	Value  string `toml:"value"`
	Versus string `toml:"versus"`
}

var (
	nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	varRE  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// refRE finds {name} references; {{ and }} are literal braces.
	refRE = regexp.MustCompile(`\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}`)
)

// ParseSweep reads one --sweep NAME=V1,V2,... of a plan variable.
func ParseSweep(s string) (Sweep, error) {
	name, list, ok := strings.Cut(s, "=")
	name = strings.TrimSpace(name)
	if !ok || list == "" || !varRE.MatchString(name) {
		return Sweep{}, fmt.Errorf("--sweep %q: want NAME=V1,V2,... with NAME a variable of the plan file", s)
	}
	sw := Sweep{Name: name}
	for _, v := range strings.Split(list, ",") {
		v = strings.TrimSpace(v)
		if v == "" {
			return Sweep{}, fmt.Errorf("--sweep %s: an empty value", name)
		}
		if slices.Contains(sw.Values, v) {
			return Sweep{}, fmt.Errorf("--sweep %s: value %q given twice", name, v)
		}
		sw.Values = append(sw.Values, v)
	}
	return sw, nil
}

// Load reads and checks the plan file at path, with the sweeps of its
// variables. Its errors name the file and, where there is one, the line.
func Load(path string, sweeps []Sweep) (*Plan, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--plan-file %s: %w", path, unwrapPath(err))
	}
	return Parse(path, b, sweeps)
}

// Parse is Load of the file's contents b.
func Parse(path string, b []byte, sweeps []Sweep) (*Plan, error) {
	var f fileTOML
	md, err := toml.Decode(string(b), &f)
	if err != nil {
		return nil, decodeError(path, b, err)
	}
	ps := &parser{path: path, md: md, loc: newLocator(b), used: map[string]bool{}}
	if un := md.Undecoded(); len(un) > 0 {
		k := un[0]
		return nil, ps.fail(ps.loc.key(k), "unknown field %q%s", k.String(), hint(k))
	}
	ps.p = &Plan{Path: path, Name: f.Name, Description: f.Description, Vars: map[string]string{}}
	if err := ps.top(&f); err != nil {
		return nil, err
	}
	if err := ps.vars(f.Vars); err != nil {
		return nil, err
	}
	if err := ps.sweeps(sweeps); err != nil {
		return nil, err
	}
	if len(f.Phase) == 0 {
		return nil, ps.fail(0, "no phase: a plan needs at least one [[phase]] with a name and a command")
	}
	if err := checkRefs(ps.p.Setup, ps.defined, ps.used); err != "" {
		return nil, ps.fail(ps.loc.top("setup"), "setup: %s", err)
	}
	seen := map[string]int{}
	for i, ph := range f.Phase {
		out, err := ps.phase(i, ph, seen)
		if err != nil {
			return nil, err
		}
		ps.p.Phases = append(ps.p.Phases, out)
	}
	for _, s := range ps.p.Sweep {
		if !ps.used[s.Name] {
			return nil, fmt.Errorf("--sweep %s: %s uses no {%s} (its variables: %s)", s.Name, path, s.Name, strings.Join(sortedKeys(ps.used), ", "))
		}
	}
	return ps.p, nil
}

// parser is Parse's state: the file decoded, where its keys are, the plan
// so far and the variables its commands used.
type parser struct {
	path string
	md   toml.MetaData
	loc  *locator
	p    *Plan
	used map[string]bool // variables referenced, by name
}

// fail is an error at line of the file (0: none).
func (ps *parser) fail(line int, format string, args ...any) error {
	return &Error{ps.path, line, fmt.Sprintf(format, args...)}
}

// defined reports whether name is a variable of the plan or a built-in.
func (ps *parser) defined(name string) bool {
	_, ok := ps.p.Vars[name]
	return ok || slices.Contains(builtins, name)
}

// top checks and takes the plan's top-level fields: name, count, workdir
// (which must be a directory) and setup.
func (ps *parser) top(f *fileTOML) error {
	p, loc := ps.p, ps.loc
	switch {
	case f.Name == "":
		return ps.fail(0, "no name: the plan's name is required (name = \"...\")")
	case !nameRE.MatchString(f.Name):
		return ps.fail(loc.top("name"), "name %q: want letters, digits, '.', '_' or '-' (at most 64)", f.Name)
	}
	if f.Count != nil {
		if *f.Count < 1 || *f.Count > MaxCount {
			return ps.fail(loc.top("count"), "count %d out of range [1, %d]", *f.Count, MaxCount)
		}
		p.Count = int(*f.Count)
	}
	var err error
	p.Dir, err = filepath.Abs(filepath.Join(filepath.Dir(ps.path), f.Workdir))
	if err != nil {
		return ps.fail(loc.top("workdir"), "workdir %q: %v", f.Workdir, err)
	}
	if fi, err := os.Stat(p.Dir); err != nil || !fi.IsDir() {
		why := "not a directory"
		if err != nil {
			why = unwrapPath(err).Error()
		}
		return ps.fail(loc.top("workdir"), "workdir %q (%s): %s", f.Workdir, p.Dir, why)
	}
	if f.Setup != nil {
		if len(f.Setup) == 0 || f.Setup[0] == "" {
			return ps.fail(loc.top("setup"), "setup: an empty command (want a program and its arguments, or no setup)")
		}
		p.Setup = f.Setup
	}
	return nil
}

// vars checks the [vars] table and takes its values as strings.
func (ps *parser) vars(vars map[string]any) error {
	for _, k := range sortedKeys(vars) {
		v, line := vars[k], ps.loc.in("vars", 0, k)
		if !varRE.MatchString(k) {
			return ps.fail(line, "variable %q: want a name of letters, digits and '_'", k)
		}
		if slices.Contains(builtins, k) {
			return ps.fail(line, "variable %q is built in (its value comes from the run): name yours otherwise", k)
		}
		s, ok := scalar(v)
		if !ok {
			return ps.fail(line, "variable %q: want a string or a number, not %s", k, ps.md.Type("vars", k))
		}
		ps.p.Vars[k] = s
	}
	return nil
}

// sweeps takes the --sweep flags: each variable's first value is its
// value until the run sweeps it. A built-in or a variable swept twice is
// an error.
func (ps *parser) sweeps(sweeps []Sweep) error {
	p := ps.p
	for _, s := range sweeps {
		if slices.Contains(builtins, s.Name) {
			return fmt.Errorf("--sweep %s: a built-in variable cannot be swept", s.Name)
		}
		if slices.ContainsFunc(p.Sweep, func(t Sweep) bool { return t.Name == s.Name }) {
			return fmt.Errorf("--sweep %s given twice", s.Name)
		}
		p.Vars[s.Name] = s.Values[0]
		p.Sweep = append(p.Sweep, s)
	}
	return nil
}

// phase checks the file's phase i, ph, and returns it; seen holds the
// lines of the names of the phases before it.
func (ps *parser) phase(i int, ph phaseTOML, seen map[string]int) (Phase, error) {
	line := ps.loc.header("phase", i)
	at := func(field string) int {
		if l := ps.loc.in("phase", i, field); l > 0 {
			return l
		}
		return line
	}
	switch {
	case ph.Name == "":
		return Phase{}, ps.fail(line, "phase %d has no name", i+1)
	case !nameRE.MatchString(ph.Name):
		return Phase{}, ps.fail(at("name"), "phase name %q: want letters, digits, '.', '_' or '-' (at most 64)", ph.Name)
	}
	if j, ok := seen[ph.Name]; ok {
		return Phase{}, ps.fail(at("name"), "phase %q is named twice (first at line %d)", ph.Name, j)
	}
	seen[ph.Name] = at("name")
	if len(ph.Command) == 0 || ph.Command[0] == "" {
		return Phase{}, ps.fail(line, "phase %q has no command (command = [\"program\", \"arg\", ...])", ph.Name)
	}
	if err := checkRefs(ph.Command, ps.defined, ps.used); err != "" {
		return Phase{}, ps.fail(at("command"), "phase %q: command: %s", ph.Name, err)
	}
	env := map[string]string{}
	for _, k := range sortedKeys(ph.Env) {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return Phase{}, ps.fail(at("env"), "phase %q: env: %q is not a variable name", ph.Name, k)
		}
		v, ok := scalar(ph.Env[k])
		if !ok {
			return Phase{}, ps.fail(at("env"), "phase %q: env %s: want a string, a number or a boolean, not %s", ph.Name, k, tomlType(ph.Env[k]))
		}
		if err := checkRefs([]string{v}, ps.defined, ps.used); err != "" {
			return Phase{}, ps.fail(at("env"), "phase %q: env %s: %s", ph.Name, k, err)
		}
		env[k] = v
	}
	if ph.Env == nil {
		env = nil
	}
	out := Phase{Name: ph.Name, Description: ph.Description, Claim: ph.Claim,
		Command: ph.Command, Env: env, Expect: []schema.Expectation{}, Line: line}
	for _, e := range ph.Expect {
		x, err := expectation(e, i)
		if err != nil {
			return Phase{}, ps.fail(at("expect"), "phase %q: expect: %v", ph.Name, err)
		}
		out.Expect = append(out.Expect, x)
	}
	return out, nil
}

// hint says what an unknown field may have meant.
func hint(k toml.Key) string {
	last := k[len(k)-1]
	switch {
	case len(k) == 1 && last == "phases":
		return " (a phase is a [[phase]] table)"
	case len(k) >= 2 && k[0] == "phase" && k[len(k)-2] == "expect":
		return " (an expect entry has metric, and change or value, and versus)"
	case len(k) >= 2 && k[0] == "phase":
		return " (a phase has name, description, command, env, claim, expect)"
	case len(k) == 1:
		return " (a plan has name, description, count, workdir, setup, vars, phase)"
	}
	return ""
}

// checkRefs checks that every {var} in ss has a value, and marks it used;
// it returns what is wrong ("" when nothing is).
func checkRefs(ss []string, defined func(string) bool, used map[string]bool) string {
	for _, s := range ss {
		for _, m := range refRE.FindAllStringSubmatch(s, -1) {
			if m[1] == "" {
				continue
			}
			if !defined(m[1]) {
				return fmt.Sprintf("{%s} has no value (set it under [vars] or with --sweep %s=...)", m[1], m[1])
			}
			used[m[1]] = true
		}
	}
	return ""
}

// expectation reads one expect entry of phase i (from 0).
func expectation(e expectTOML, i int) (schema.Expectation, error) {
	d, err := metric.Lookup(e.Metric)
	switch {
	case e.Metric == "":
		return schema.Expectation{}, errors.New("no metric")
	case err != nil:
		return schema.Expectation{}, fmt.Errorf("metric %q is not registered (a program watched from outside has peak_rss_bytes, final_rss_bytes, final_vsz_bytes, max_rss_bytes, ...)", e.Metric)
	case d.Run == nil && d.Outside == nil:
		return schema.Expectation{}, fmt.Errorf("metric %q is one of decode results, not of a run", e.Metric)
	case !(&schema.Result{Kind: schema.KindProcess}).Measures(e.Metric) && d.Outside == nil:
		return schema.Expectation{}, fmt.Errorf("metric %q is measured only inside the reference trainer, not from outside", e.Metric)
	}
	x := schema.Expectation{Metric: e.Metric}
	switch {
	case e.Change != "" && e.Value != "":
		return x, errors.New("change and value both given: want one")
	case e.Value != "":
		if e.Versus != "" {
			return x, errors.New("value is a claimed figure: it takes no versus")
		}
		v, err := number(e.Value, d.Unit, false)
		if err != nil {
			return x, fmt.Errorf("value %q: %v", e.Value, err)
		}
		if v <= 0 {
			return x, fmt.Errorf("value %q: want a positive figure", e.Value)
		}
		x.Versus, x.Delta = "absolute", v
		return x, nil
	case e.Change == "":
		return x, errors.New("no change (\"-35%\", \"-455MB\", \"0.5x\") or value")
	}
	switch e.Versus {
	case "", "previous":
		x.Versus = "previous"
	case "before":
		x.Versus = "before"
	default:
		return x, fmt.Errorf("versus %q: want previous or before", e.Versus)
	}
	if i == 0 {
		return x, fmt.Errorf("the first phase has no %s phase to change from", x.Versus)
	}
	c := strings.TrimSpace(e.Change)
	switch {
	case strings.HasSuffix(c, "%"):
		v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(c, "%")), 64)
		if err != nil || (c[0] != '+' && c[0] != '-') || v <= -100 || v == 0 {
			return x, fmt.Errorf("change %q: want a signed percentage above -100%% and not 0 (\"-35%%\", \"+10%%\")", e.Change)
		}
		x.Ratio = 1 + v/100
	case strings.HasSuffix(c, "x"):
		v, err := strconv.ParseFloat(strings.TrimSuffix(c, "x"), 64)
		if err != nil || v <= 0 || v == 1 {
			return x, fmt.Errorf("change %q: want a factor new/old, positive and not 1 (\"0.5x\", \"63x\")", e.Change)
		}
		x.Ratio = v
	default:
		v, err := number(c, d.Unit, true)
		if err != nil {
			return x, fmt.Errorf("change %q: %v", e.Change, err)
		}
		if isBytes(d.Unit) && !hasSizeUnit(c) {
			// A bare number would be bytes: "-30" meant -30% or -30MB.
			return x, fmt.Errorf("change %q has no unit: write %s%% or %sMB", e.Change, c, c)
		}
		if v == 0 {
			return x, fmt.Errorf("change %q: a claimed change is not 0", e.Change)
		}
		x.Delta = v
	}
	return x, nil
}

// sizeUnits are the byte units a bytes metric's figure may carry.
var sizeUnits = []struct {
	name string
	mul  float64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"kB", 1e3}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1},
}

func isBytes(unit string) bool { return unit == metric.Bytes || unit == metric.BytesPerStep }

// hasSizeUnit reports whether the figure s ends in a size unit.
func hasSizeUnit(s string) bool {
	return slices.ContainsFunc(sizeUnits, func(u struct {
		name string
		mul  float64
	}) bool {
		return strings.HasSuffix(s, u.name)
	})
}

// number reads a figure in unit: a number, for bytes with a size unit
// ("455MB", "1 GiB"); signed asks for a leading + or -.
func number(s, unit string, signed bool) (float64, error) {
	s = strings.TrimSpace(s)
	if signed && !strings.HasPrefix(s, "+") && !strings.HasPrefix(s, "-") {
		return 0, errors.New("want a signed change (\"-455MB\", \"+10%\") or a factor (\"0.5x\")")
	}
	mul := 1.0
	if isBytes(unit) {
		for _, u := range sizeUnits {
			if strings.HasSuffix(s, u.name) {
				s, mul = strings.TrimSpace(strings.TrimSuffix(s, u.name)), u.mul
				break
			}
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		if isBytes(unit) {
			return 0, errors.New("want a number of bytes, with B, kB, MB, GB, KiB, MiB or GiB")
		}
		return 0, fmt.Errorf("want a number in %s", unit)
	}
	return v * mul, nil
}

func sortedKeys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
