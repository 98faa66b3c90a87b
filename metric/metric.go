// Package metric is the one registry of the figures memprobe compares,
// summarises, exports and charts. Its place in the pipeline:
//
//  1. schema reads a run report or decode records (probe run, probe decode);
//  2. metric names the figures in them: each Def reads one figure by a
//     typed accessor (no reflection, no JSON round trip), with its unit
//     and whether it is exact by construction;
//  3. stats summarises and compares the values (medians, intervals, the
//     U test);
//  4. report renders them: tables, diff, history, export, HTML.
//
// A name that is not registered is a usage error (Lookup) listing the
// registered ones: a figure no reader knows is a typo, not a table of
// nothing.
package metric

import (
	"fmt"
	"slices"
	"strings"

	"memprobe/schema"
)

// Kind is what a metric is read from: the repetitions of a run report,
// or decode records.
type Kind int

const (
	// Run is a run report's repetition (schema.Result) or its parent's
	// view of it (schema.Outside).
	Run Kind = iota
	// Decode is a record of probe decode (schema.DecodeRecord).
	Decode
)

func (k Kind) String() string {
	if k == Decode {
		return "decode results"
	}
	return "run reports"
}

// Def is one metric. Its accessors say whether the value is there (a
// nested object may be null, a device may not time its work); a nil
// accessor means the kind has no such figure.
type Def struct {
	// Name is the JSON name, or a dotted path to a nested field; the unit
	// is in the name (peak_rss_bytes, step_ns_median).
	Name string
	// Unit is the value's unit: "bytes", "ns", "tokens/s", "count", ...
	Unit string
	// Label is how a sentence names the metric ("peak RSS" in a claim's
	// footnote); "" where its name is the label (Title).
	Label string
	// Exact says a configuration fixes the value (at a fixed seed): any
	// change is a change, compared without statistics.
	Exact bool
	// Bench is the value's unit in the Go benchmark format (probe export
	// --format bench): no spaces, "B" for bytes as benchstat scales it,
	// "op" a training step or a decoded token ("peak-rss-B", "ns/op");
	// "" where export does not write the metric.
	Bench string
	// Default says a diff compares the metric, for each kind that has it
	// (Of), when none is named: probe diff's and history's suggestions
	// (Defaults).
	Default bool
	// Run reads a repetition's figure; Outside the parent's view of a
	// repetition (wait4's rusage).
	Run     func(*schema.Result) (float64, bool)
	Outside func(*schema.Outside) (float64, bool)
	// Decode reads a decode record's figure; Passes its per-pass samples
	// and Runs its per-run samples (a record pooling runs), nil or empty
	// where the record has none.
	Decode func(*schema.DecodeRecord) (float64, bool)
	Passes func(*schema.DecodeRecord) []float64
	Runs   func(*schema.DecodeRecord) []float64
}

// Of says whether kind k has the metric at all.
func (d Def) Of(k Kind) bool {
	if k == Decode {
		return d.Decode != nil || d.Passes != nil || d.Runs != nil
	}
	return d.Run != nil || d.Outside != nil
}

// Title is how a sentence names the metric: its Label, else its name.
func (d Def) Title() string {
	if d.Label != "" {
		return d.Label
	}
	return d.Name
}

// UnknownError is a name that is not registered: a usage error.
type UnknownError struct {
	Name string
	// Known are the registered names, in registry order.
	Known []string
}

func (e *UnknownError) Error() string {
	return fmt.Sprintf("unknown metric %q: the metrics are %s", e.Name, strings.Join(e.Known, ", "))
}

// byName indexes registry.
var byName = func() map[string]int {
	m := make(map[string]int, len(registry))
	for i, d := range registry {
		if _, dup := m[d.Name]; dup {
			panic("metric: " + d.Name + " registered twice")
		}
		m[d.Name] = i
	}
	return m
}()

// Lookup is the metric of that name, or an *UnknownError listing the
// registered ones.
func Lookup(name string) (Def, error) {
	if i, ok := byName[name]; ok {
		return registry[i], nil
	}
	return Def{}, &UnknownError{Name: name, Known: Names(-1)}
}

// Names are the registered metrics of kind k in registry order; every
// metric when k is negative. The caller owns the slice.
func Names(k Kind) []string {
	var out []string
	for _, d := range registry {
		if k < 0 || d.Of(k) {
			out = append(out, d.Name)
		}
	}
	return out
}

// Defaults are the metrics of kind k a diff compares when none is named
// (Def.Default), in registry order. The caller owns the slice.
func Defaults(k Kind) []string {
	var out []string
	for _, d := range registry {
		if d.Default && d.Of(k) {
			out = append(out, d.Name)
		}
	}
	return out
}

// All is every Def, in registry order; the caller owns the slice.
func All() []Def { return slices.Clone(registry) }
