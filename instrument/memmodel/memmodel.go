// Package memmodel is the analytical memory model of the reference trainer:
// from the configuration alone it computes what each ledger component
// should hold, and it lines that up against what the ledger measured.
//
// It is the "expected" column of the design notes' expected-vs-actual
// table; [memprobe/ledger] is the "actual" one. The pipeline:
//
//  1. Expected turns an Input (model.Config, threads, executors, dataset
//     size, the trainer's pathology switches) into one Component per ledger
//     name, each with its byte count and the formula that gave it. It never
//     reads the ledger.
//  2. Compare joins those with a ledger Snapshot into Rows: expected,
//     measured (current), peak, the difference in percent and a finding
//     flag where they differ by more than Tolerance.
//  3. Render prints the rows as a plain-text table.
//
// The sizes follow llm.c's train_gpt2.c, adapted to this trainer: one
// backing slice per memory class, float32 throughout (4 bytes), the LM head
// tied to wte, and activations per executor rather than per batch
// (model.Config.ActsSize is one sequence's activations; an executor runs
// one sequence at a time).
package memmodel

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"memprobe/ledger"
	"memprobe/schema"
)

// Tolerance is the relative difference, in percent, above which a row is a
// finding.
const Tolerance = 1.0

// Input is everything the model may look at: configuration, never
// measurements. Config is the run's configuration as a result records it
// (model shape, threads, executors asked for, the pathology switches, the
// decode mode and device); GOMAXPROCS the run's, on which the default
// executor count depends (Executors computes the count from both, never
// taking the trainer's); the token count is the dataset's.
type Input struct {
	Config        schema.Config
	GOMAXPROCS    int // the run's runtime.GOMAXPROCS (result's gomaxprocs)
	DatasetTokens int // tokens in the training array (uint16 each)
}

// Component is one ledger name's expected size.
type Component struct {
	Name string `json:"component"`
	// Bytes is what the component should hold between steps and at the end
	// of the run.
	Bytes int64 `json:"bytes"`
	// PeakBytes is the most it should hold at once; equal to Bytes for a
	// buffer allocated once, larger for one allocated and freed per step.
	PeakBytes int64 `json:"peak_bytes"`
	// Formula is how Bytes was computed, with the numbers substituted.
	Formula string `json:"formula"`
}

// Expected computes every component the trainer registers in this
// configuration, in the trainer's allocation order: the four parameter-sized
// buffers; each workspace's activations, backward workspace and caches
// (executors, or worker contexts with Pathology.ContextWorkspaces); the
// batches; the step's per-sequence losses and norm sums; the sphere
// hierarchy's unused contexts; worker thread stacks; decode-head device
// and host buffers; the dataset's token array. Components whose
// size depends on what the run does (the tape's arena and temporaries) are
// not modelled: they appear in Compare as ledger-only rows.
func Expected(in Input) []Component {
	P := numParams(in.Config.Model)
	var out []Component
	add := func(name string, bytes int64, formula string, args ...any) {
		out = append(out, Component{Name: name, Bytes: bytes, PeakBytes: bytes, Formula: fmt.Sprintf(formula, args...)})
	}
	for _, name := range []string{ledger.Params, ledger.Grads, ledger.AdamM, ledger.AdamV} {
		add(name, 4*P, "4 B × P (%d)", P)
	}
	out = append(out, components(in)...)
	add(ledger.DatasetTokens, 2*int64(in.DatasetTokens), "2 B × tokens (%d)", in.DatasetTokens)
	return out
}

// TotalBytes sums Bytes over cs.
func TotalBytes(cs []Component) int64 {
	var t int64
	for _, c := range cs {
		t += c.Bytes
	}
	return t
}

// Row is one line of the model-vs-ledger table: the result's
// [schema.LedgerRow], where its fields are documented.
type Row = schema.LedgerRow

// Compare joins the model's components with a ledger snapshot. Rows come in
// the model's order, then components only the ledger has, by name. A nil
// or empty snapshot (instruments off) gives rows with zero measurements.
// The result is never nil.
func Compare(expected []Component, measured []ledger.Entry) []Row {
	byName := make(map[string]ledger.Entry, len(measured))
	for _, e := range measured {
		byName[e.Component] = e
	}
	rows := make([]Row, 0, len(expected)+len(measured))
	seen := map[string]bool{}
	for _, c := range expected {
		e, ok := byName[c.Name]
		seen[c.Name] = true
		r := Row{Component: c.Name, ExpectedBytes: c.Bytes, ExpectedPeakBytes: c.PeakBytes, Formula: c.Formula,
			MeasuredBytes: e.CurrentBytes, PeakBytes: e.PeakBytes, Allocs: e.Allocs, Frees: e.Frees}
		judge(&r, ok)
		rows = append(rows, r)
	}
	var rest []string
	for _, e := range measured {
		if !seen[e.Component] {
			rest = append(rest, e.Component)
		}
	}
	sort.Strings(rest)
	for _, name := range rest {
		e := byName[name]
		r := Row{Component: name, MeasuredBytes: e.CurrentBytes, PeakBytes: e.PeakBytes, Allocs: e.Allocs, Frees: e.Frees}
		judge(&r, true)
		rows = append(rows, r)
	}
	return rows
}

func judge(r *Row, inLedger bool) {
	r.DiffPct = diffPct(r.MeasuredBytes, r.ExpectedBytes)
	r.PeakDiffPct = diffPct(r.PeakBytes, r.ExpectedPeakBytes)
	switch {
	case !inLedger:
		r.Finding = r.ExpectedBytes != 0 || r.ExpectedPeakBytes != 0
		if r.Finding {
			r.Note = "not in the ledger: the trainer did not register it"
		}
	case r.ExpectedBytes == 0 && r.ExpectedPeakBytes == 0:
		r.Finding = r.MeasuredBytes != 0 || r.PeakBytes != 0
		if r.Finding {
			r.Note = "not in the model: the ledger holds bytes the configuration does not explain"
		}
	default:
		var why []string
		if off(r.DiffPct, r.MeasuredBytes) {
			why = append(why, fmt.Sprintf("measured %+.1f%% vs model", *orZero(r.DiffPct)))
		}
		if off(r.PeakDiffPct, r.PeakBytes) {
			why = append(why, fmt.Sprintf("peak %+.1f%% vs model", *orZero(r.PeakDiffPct)))
		}
		r.Finding = len(why) > 0
		if r.Finding {
			r.Note = fmt.Sprintf("differs by more than %g%%: %s", Tolerance, strings.Join(why, ", "))
		}
	}
}

// off reports whether a difference is beyond Tolerance; an undefined
// difference (expected 0) is off when anything was measured.
func off(d *float64, measured int64) bool {
	if d == nil {
		return measured != 0
	}
	return math.Abs(*d) > Tolerance
}

func diffPct(measured, expected int64) *float64 {
	if expected == 0 {
		return nil
	}
	d := 100 * float64(measured-expected) / float64(expected)
	d = math.Round(d*1000) / 1000 // three decimals keep JSON stable
	return &d
}

func orZero(d *float64) *float64 {
	if d == nil {
		z := 0.0
		return &z
	}
	return d
}

// Findings returns the rows flagged as findings; never nil.
func Findings(rows []Row) []Row {
	out := []Row{}
	for _, r := range rows {
		if r.Finding {
			out = append(out, r)
		}
	}
	return out
}
