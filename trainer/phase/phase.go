// Package phase names the design notes' fix plans as settings of the one
// trainer: a Plan is a note's list of phases, each phase one fix, applied
// cumulatively on top of the plan's "before" state (the note's broken
// program). Selecting phase Pk applies before, then P1 .. Pk, to a
// trainer.Options; nothing else differs between phases, so a phase's
// effect is measured on the same code path as the fixed trainer.
//
// `probe train --plan NAME --phase before|P1..` selects a state and
// `probe train --list-phases` prints List's table. docs/phases.md has one
// section per plan with the measurements.
package phase

import (
	"fmt"
	"io"
	"strings"

	"memprobe/internal/table"
	"memprobe/trainer"
)

// Phase is one state of a plan.
type Phase struct {
	Name        string // "before", "P1", "P2", ...
	Description string // one line: what the phase changes
	Claim       string // what the note claims for it, in the note's words and figures
	Mechanism   string // what changes in this trainer
	// Expect is the checkable part of Claim (nil when it has none): what
	// `probe run` copies into its report's runs and `probe report`
	// checks the measurements against.
	Expect []Expectation
	// Apply sets the phase's switches. Phases[0].Apply sets the before
	// state; Phases[k].Apply, k > 0, makes the k-th fix only.
	Apply func(*trainer.Options)
}

// Expectation is one checkable claim of a note: the change of one metric
// of the job result against the previous phase or the plan's before state,
// or the metric's value itself. It has schema.Expectation's fields, one for
// one (the trainer does not import the result format; the runner copies
// them).
type Expectation struct {
	// Metric is the result's JSON field, its unit in its name
	// ("peak_rss_bytes", "tokens_per_sec", "step_ns_median").
	Metric string
	// Versus is VersusPrevious, VersusBefore or VersusAbsolute.
	Versus string
	// Ratio is the claimed factor new/old (63 for "63x speedup", 0.1 for
	// "10x less"); Delta the claimed change new − old in the metric's unit
	// (−455e6 for "save 455 MB"), or with VersusAbsolute the claimed value
	// itself (1.32e9 for "1.32 GB peak"). Exactly one is set. A range in
	// the note ("3-5x") is given as its geometric mean.
	Ratio float64
	Delta float64
}

// The values of Expectation.Versus.
const (
	VersusPrevious = "previous" // the phase before this one
	VersusBefore   = "before"   // the plan's before state
	VersusAbsolute = "absolute" // no reference: Delta is the claimed value
)

// Plan is a note's fix plan.
type Plan struct {
	Name   string
	Notes  []string // the design notes it comes from (file names in shared/seeds)
	Phases []Phase  // Phases[0] is "before"
}

// Plans lists every plan, in the order --list-phases prints them.
func Plans() []Plan { return []Plan{threadsPlan(), arenaPlan(), embeddingPlan(), decodePlan()} }

// Lookup returns the named plan.
func Lookup(name string) (Plan, error) {
	var names []string
	for _, p := range Plans() {
		if p.Name == name {
			return p, nil
		}
		names = append(names, p.Name)
	}
	return Plan{}, fmt.Errorf("plan %q: not one of %s", name, strings.Join(names, ", "))
}

// After names a plan's fixed state: its last phase, whatever its number
// (P6 of threads, P2 of arena and embedding, P3 of decode).
const After = "after"

// Index returns the position of the named phase in p.Phases; After is the
// last.
func (p Plan) Index(phase string) (int, error) {
	if phase == After {
		return len(p.Phases) - 1, nil
	}
	var names []string
	for i, ph := range p.Phases {
		if ph.Name == phase {
			return i, nil
		}
		names = append(names, ph.Name)
	}
	return 0, fmt.Errorf("phase %q of plan %s: not one of %s, or after", phase, p.Name, strings.Join(names, ", "))
}

// Resolve is the phase's own name: After resolved to the last phase's.
func (p Plan) Resolve(phase string) string {
	if k, err := p.Index(phase); err == nil {
		return p.Phases[k].Name
	}
	return phase
}

// Configure puts o in the named phase: the before state, then every fix up
// to and including the phase. Fields the plan does not touch keep their
// values.
func (p Plan) Configure(o *trainer.Options, phase string) error {
	k, err := p.Index(phase)
	if err != nil {
		return err
	}
	for _, ph := range p.Phases[:k+1] {
		ph.Apply(o)
	}
	return nil
}

// Select is Lookup then Configure.
func Select(o *trainer.Options, plan, phase string) error {
	p, err := Lookup(plan)
	if err != nil {
		return err
	}
	return p.Configure(o, phase)
}

// List writes one table per plan, titled with the plan and its notes: each
// phase's name, description and the note's claim.
func List(w io.Writer) error {
	for i, p := range Plans() {
		if i > 0 {
			if _, err := io.WriteString(w, "\n"); err != nil {
				return err
			}
		}
		t := table.New(fmt.Sprintf("plan %s (%s)", p.Name, strings.Join(p.Notes, ", ")),
			table.Column{Name: "phase"}, table.Column{Name: "change"}, table.Column{Name: "claim"})
		for _, ph := range p.Phases {
			var claim any
			if ph.Claim != "" {
				claim = ph.Claim
			}
			t.Add(ph.Name, ph.Description, claim)
		}
		if err := t.Render(w, table.Text); err != nil {
			return err
		}
	}
	return nil
}
