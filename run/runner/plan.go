package runner

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"memprobe/instrument/profiling"
	"memprobe/run/job"
	"memprobe/run/planfile"
	"memprobe/schema"
	"memprobe/trainer"
	"memprobe/trainer/data"
	"memprobe/trainer/decode"
	"memprobe/trainer/model"
	"memprobe/trainer/phase"
)

// Scale is the size at which a configuration runs: a model preset, the
// optimizer steps and the data, with the reason for the choice (it goes
// into schema.Run.Scale).
type Scale struct {
	Preset string
	Steps  int
	Data   string
	Why    string
}

// String is the scale and its reason in one line, as schema.Run.Scale
// records it.
func (s Scale) String() string {
	return fmt.Sprintf("%s preset, %d steps, %s: %s", s.Preset, s.Steps, s.Data, s.Why)
}

// The per-plan scales: the largest at which `probe run --threads 63`
// finishes every plan in about 5 minutes with 3 repetitions on 2 cores
// (docs/run.md has the measured costs). A plan's before state decides:
// it is the costly one.
var defaultScales = map[string]Scale{
	"threads": {Preset: "seed", Steps: 3, Data: "synthetic:24MB",
		Why: "the notes' scenario (seed model, 24 MB of data); its before state takes 10-18 s and 4.6 GB for 3 steps on 2 cores"},
	"arena": {Preset: "tiny", Steps: 3, Data: "synthetic:1MB",
		Why: "tiny preset: the before state's naive GEMM takes 42 s a step at seed"},
	"embedding": {Preset: "seed", Steps: 3, Data: "synthetic:1MB",
		Why: "the before state keeps every step's tape graph: 8-13 s and 3.3 GB for 3 steps on 2 cores; 1 MB of data, which this plan does not depend on"},
	"decode": {Preset: "tiny", Steps: 3, Data: "synthetic:1MB",
		Why: "tiny preset: the LM head is a larger share of a step, so per-token decoding shows (1.3x between before and P3 at seed, where each phase costs 5 s)"},
}

// quickScale is --quick's scale for every plan.
var quickScale = Scale{Preset: "tiny", Steps: 2, Data: "synthetic:200KB",
	Why: "--quick: a smoke test of every plan and phase, not a measurement"}

// PlanScale is the scale plan runs at by default, and its reason.
func PlanScale(plan string) (Scale, bool) {
	s, ok := defaultScales[plan]
	return s, ok
}

// The sweep axes: the knobs of `probe train` a run may sweep.
const (
	AxisThreads    = "threads"
	AxisCacheScale = "cache-scale"
	AxisDecode     = "decode"
	AxisBatchAlloc = "batch-alloc"
)

// Axis is one swept knob and its values, in the order given.
type Axis = planfile.Sweep

// ParseAxis reads one --sweep: AXIS=V1,V2,... where AXIS is threads,
// cache-scale, decode or batch-alloc. Each value is checked here with
// the syntax and the range probe train's flag enforces (its threads and
// cache scale ranges are trainer.MaxThreads and trainer.MaxCacheScale),
// so that a bad value fails once, before any child starts, and not once
// per configuration and repetition in the children.
func ParseAxis(s string) (Axis, error) {
	name, list, ok := strings.Cut(s, "=")
	if !ok || name == "" || list == "" {
		return Axis{}, fmt.Errorf("--sweep %q: want AXIS=V1,V2,... (axes: threads, cache-scale, decode, batch-alloc)", s)
	}
	a := Axis{Name: strings.TrimSpace(name)}
	for _, v := range strings.Split(list, ",") {
		v = strings.TrimSpace(v)
		if err := checkAxisValue(a.Name, v); err != nil {
			return Axis{}, fmt.Errorf("--sweep %s: %w", a.Name, err)
		}
		if slices.Contains(a.Values, v) {
			return Axis{}, fmt.Errorf("--sweep %s: value %q given twice", a.Name, v)
		}
		a.Values = append(a.Values, v)
	}
	return a, nil
}

func checkAxisValue(axis, v string) error {
	switch axis {
	case AxisThreads:
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("%q is not a thread count", v)
		}
		if n < 1 || n > trainer.MaxThreads {
			return fmt.Errorf("%d out of range [1, %d]", n, trainer.MaxThreads)
		}
	case AxisCacheScale:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("%q is not a number (want a factor in [1, %d])", v, trainer.MaxCacheScale)
		}
		// probe train --cache-scale: 1 (right-sized) to MaxCacheScale.
		if f < 1 || f > trainer.MaxCacheScale {
			return fmt.Errorf("%s out of range [1, %d]", v, trainer.MaxCacheScale)
		}
	case AxisDecode:
		if _, err := decode.ParseMode(v); err != nil {
			return err
		}
	case AxisBatchAlloc:
		if _, err := phase.BatchAlloc(v); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown axis %q (want threads, cache-scale, decode or batch-alloc)", axis)
	}
	return nil
}

// Config is one configuration of a run: a plan's phase at one point of
// the sweep grid, at its scale, with the child command line that runs it.
type Config struct {
	// Index is the position in the whole plan, before sharding.
	Index int
	// Name is "<plan>-<phase>", then " axis=value" per swept axis.
	Name  string
	Plan  string
	Phase string // resolved: "after" is recorded as the phase it names
	// Sweep is the swept axes' values (nil without --sweep).
	Sweep   map[string]string
	Scale   Scale
	Threads int
	// Description, Claim and Expect are the phase's (phase.Phase): what
	// it changes, the note's claim, and its checkable part.
	Description string
	Claim       string
	Expect      []schema.Expectation
	// Schema is the configuration as the child will record it, as far as
	// the parent knows it (the model, the switches, the scale): what the
	// memory prediction reads.
	Schema schema.Config
	// Args are the child's arguments after the executable, without the
	// --json and --profile-* flags the runner adds per repetition.
	Args []string
	// Prediction is the model's memory and time estimate (Predict).
	Prediction Prediction
	// Process is a plan file's configuration: a program watched from
	// outside, not probe train (nil for the built-in plans). PhaseIndex
	// is its phase's position in the plan file.
	Process    *ProcessSpec
	PhaseIndex int
}

// Plan lists the configurations o asks for, in the order they run: plans
// in phase.Plans order, phases in plan order, then the sweep grid (the
// first axis varies slowest). It does not shard (see Shard) and does not
// predict (see Predict).
func Plan(o Options) ([]Config, error) {
	if o.PlanFile != nil {
		return planFileConfigs(o)
	}
	plans, err := selectPlans(o.Plans)
	if err != nil {
		return nil, err
	}
	grid := planfile.Grid(o.Sweep)
	var out []Config
	used := map[string]bool{}
	for _, p := range plans {
		phases := phasesOf(p, o.Phases, len(o.Sweep) > 0)
		for _, ph := range phases {
			used[ph.asked] = true
		}
		scale := o.scaleFor(p.Name)
		for _, ph := range phases {
			for _, point := range grid {
				c, err := configure(o, p, ph.name, point, scale)
				if err != nil {
					return nil, err
				}
				c.Index = len(out)
				out = append(out, c)
			}
		}
	}
	for _, name := range o.Phases {
		if !used[name] {
			return nil, fmt.Errorf("--phases: no selected plan has a phase %q", name)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no configuration to run")
	}
	return out, nil
}

func selectPlans(names []string) ([]phase.Plan, error) {
	all := phase.Plans()
	if len(names) == 0 || slices.Contains(names, "all") {
		return all, nil
	}
	var out []phase.Plan
	for _, p := range all {
		if slices.Contains(names, p.Name) {
			out = append(out, p)
		}
	}
	for _, n := range names {
		if _, err := phase.Lookup(n); err != nil {
			return nil, fmt.Errorf("--plan: %w", err)
		}
	}
	return out, nil
}

type chosenPhase struct{ name, asked string }

// phasesOf is the phases of p to run: those asked for that p has (after
// resolved, duplicates dropped), or every phase; with a sweep and no
// --phases, the before and after states.
func phasesOf(p phase.Plan, asked []string, sweep bool) []chosenPhase {
	if len(asked) == 0 {
		if sweep {
			asked = []string{"before", phase.After}
		} else {
			for _, ph := range p.Phases {
				asked = append(asked, ph.Name)
			}
		}
	}
	var out []chosenPhase
	seen := map[string]bool{}
	for _, a := range asked {
		if _, err := p.Index(a); err != nil {
			continue // a phase of another plan
		}
		name := p.Resolve(a)
		if seen[name] {
			continue
		}
		seen[name] = true
		out = append(out, chosenPhase{name: name, asked: a})
	}
	// In plan order, whatever the order asked.
	slices.SortStableFunc(out, func(a, b chosenPhase) int {
		i, _ := p.Index(a.name)
		j, _ := p.Index(b.name)
		return i - j
	})
	return out
}

func (o Options) scaleFor(plan string) Scale {
	s := defaultScales[plan]
	if o.Quick {
		s = quickScale
	}
	var from []string
	if o.Preset != "" {
		s.Preset = o.Preset
		from = append(from, "--preset")
	}
	if o.Steps != 0 {
		s.Steps = o.Steps
		from = append(from, "--steps")
	}
	if o.Data != "" {
		s.Data = o.Data
		from = append(from, "--data")
	}
	if len(from) > 0 {
		s.Why = strings.Join(from, ", ") + " from the command line; " + s.Why
	}
	return s
}

// configure builds the configuration of plan p's phase at a sweep point.
func configure(o Options, p phase.Plan, phaseName string, point map[string]string, s Scale) (Config, error) {
	mc, err := model.Preset(s.Preset)
	if err != nil {
		return Config{}, fmt.Errorf("--preset: %w", err)
	}
	threads := o.Threads
	if v, ok := point[AxisThreads]; ok {
		threads, _ = strconv.Atoi(v) // checked by ParseAxis
	}
	t := trainer.Options{Config: mc, Threads: threads, GEMM: "auto"}
	if err := p.Configure(&t, phaseName); err != nil {
		return Config{}, err
	}
	// The child checks its data spec against its vocabulary (a synthetic
	// corpus must hold every id): so does the parent, once.
	if err := data.CheckSpec(s.Data, t.Config.Vocab); err != nil {
		return Config{}, fmt.Errorf("--data: %w", err)
	}
	k, _ := p.Index(phaseName)
	c := Config{
		Name: p.Name + "-" + phaseName, Plan: p.Name, Phase: phaseName,
		Scale: s, Threads: threads,
		Description: p.Phases[k].Description, Claim: p.Phases[k].Claim, Expect: []schema.Expectation{},
	}
	for _, e := range p.Phases[k].Expect {
		c.Expect = append(c.Expect, schema.Expectation(e))
	}
	c.Args = []string{"train", "--preset", s.Preset, "--threads", strconv.Itoa(threads),
		"--plan", p.Name, "--phase", phaseName, "--steps", strconv.Itoa(s.Steps), "--data", s.Data}
	// The knobs, in a fixed order whatever the order of --sweep.
	for _, axis := range []string{AxisThreads, AxisCacheScale, AxisDecode, AxisBatchAlloc} {
		v, ok := point[axis]
		if !ok {
			continue
		}
		if c.Sweep == nil {
			c.Sweep = map[string]string{}
		}
		c.Sweep[axis] = v
		c.Name += " " + axis + "=" + v
		switch axis {
		case AxisCacheScale:
			t.Pathology.CacheScale, _ = strconv.ParseFloat(v, 64)
		case AxisDecode:
			t.Decode = v
		case AxisBatchAlloc:
			t.Pathology.EagerBatches, _ = phase.BatchAlloc(v)
		}
		if axis != AxisThreads {
			c.Args = append(c.Args, "--"+axis, v)
		}
	}
	// probe train refuses a decode head on the tape engine (the arena and
	// embedding plans' phases): every child of such a point would fail.
	if v, ok := point[AxisDecode]; ok && t.Engine == "tape" {
		return Config{}, fmt.Errorf("--sweep decode=%s: %s runs the tape engine, and the decode head runs with engine static only; sweep decode over --plan threads or decode", v, c.Name)
	}
	c.Schema = schema.Config{
		Preset: s.Preset, Model: schema.Model(mc), Threads: threads,
		Plan: p.Name, Phase: phaseName,
		Pathology: schema.Pathology(t.Pathology), Engine: t.Engine, Tape: schema.Tape(t.Tape), Side: schema.SideWork(t.Side),
		Decode: t.Decode, GEMM: t.GEMM, Data: s.Data, Steps: s.Steps,
	}
	if c.Schema.Engine == "" {
		c.Schema.Engine = "static"
	}
	return c, nil
}

// Shard keeps the configurations of shard i of n: every n-th, from the
// i-th (by Index, so that shards of the same plan never overlap and
// together hold every configuration).
func Shard(cs []Config, i, n int) []Config {
	if n <= 1 {
		return cs
	}
	var out []Config
	for _, c := range cs {
		if c.Index%n == i {
			out = append(out, c)
		}
	}
	return out
}

// ParseShard reads --shard I/N: 0 ≤ I < N.
func ParseShard(s string) (i, n int, err error) {
	a, b, ok := strings.Cut(s, "/")
	if ok {
		i, err = strconv.Atoi(a)
		if err == nil {
			n, err = strconv.Atoi(b)
		}
	}
	if !ok || err != nil || n < 1 || i < 0 || i >= n {
		return 0, 0, fmt.Errorf("--shard %q: want I/N with 0 <= I < N", s)
	}
	return i, n, nil
}

// childArgs are c's arguments for repetition rep (from 1), writing its
// result to jsonPath.
func (c Config) childArgs(o Options, rep int, jsonPath string) []string {
	args := append(slices.Clone(c.Args), "--json", jsonPath)
	if o.MemLimit > 0 {
		args = append(args, "--mem-limit", sizeArg(o.MemLimit))
	}
	if o.ProfileDir != "" {
		args = append(args, "--profile-dir", o.ProfileDir,
			"--profile-name", fmt.Sprintf("%s-r%d", profiling.SafeName(c.Name), rep))
	}
	return args
}

// sizeArg writes n bytes for a size flag: in GiB, MiB or KiB when exact.
func sizeArg(n int64) string {
	for _, u := range []struct {
		name string
		b    int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n%u.b == 0 {
			return strconv.FormatInt(n/u.b, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

// datasetTokens is job.DatasetTokens.
func datasetTokens(spec string, fileSize func(string) (int64, error)) (int64, error) {
	return job.DatasetTokens(spec, fileSize)
}
