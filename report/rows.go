package report

import (
	"fmt"

	"memprobe/metric"
	"memprobe/schema"
)

// Rows is what one input holds, as rows of one kind: a run report's runs
// (metric.Run) or the records of probe decode (metric.Decode). Compare,
// Blocks, WriteBench and the history read either through it, the
// metrics through the registry (memprobe/metric); what differs between
// the kinds is said where it differs (Row's methods, comparable,
// exactness), not in a second pipeline.
type Rows struct {
	Kind metric.Kind
	// Report is the run report of a Run input; Decode the records of a
	// Decode input. The rows point into them.
	Report *schema.Report
	Decode []schema.DecodeRecord
	// All is every row, in the input's order, a key that repeats
	// included (index keeps the first).
	All []*Row
}

// Row is one configuration of an input: a run of a run report (its
// repetitions) or a decode record (its passes, or the runs it pooled).
// Its key is (plan, phase, sweep point) for a run, (mode, device, shape)
// for a decode record, whose plan is "decode" and phase its mode.
type Row struct {
	Kind metric.Kind
	// Key names the row for matching: ConfigKey for a run, DecodeRecord.Key for
	// a decode record.
	Key   string
	Plan  string
	Phase string
	// Sweep is a run's sweep values; nil for a decode record, whose
	// settings (decodeSetting) a comparison names where they vary.
	Sweep map[string]string
	// Mode, Device and Shape ("B=32 T=128 C=256 V=788") are a decode
	// record's; "" for a run.
	Mode, Device, Shape string
	Status              schema.Status

	run *runView
	rec *decodeView
}

// ReportRows is a run report's runs as rows.
func ReportRows(rep *schema.Report) *Rows {
	rs := &Rows{Kind: metric.Run, Report: rep}
	for i := range rep.Runs {
		v := newRunView(&rep.Runs[i])
		rs.All = append(rs.All, &Row{Kind: metric.Run, Key: ConfigKey(v.Run), Plan: v.Plan, Phase: v.Phase,
			Sweep: v.Sweep, Status: v.Status, run: v})
	}
	return rs
}

// DecodeRows is decode records (probe decode --json) as rows.
func DecodeRows(recs []schema.DecodeRecord) *Rows {
	rs := &Rows{Kind: metric.Decode, Decode: recs}
	for i := range recs {
		v := newDecodeView(&recs[i])
		m := v.Config.Model
		rs.All = append(rs.All, &Row{Kind: metric.Decode, Key: v.key, Plan: "decode", Phase: v.Decode,
			Mode: v.Decode, Device: v.Device, Shape: fmt.Sprintf("B=%d T=%d C=%d V=%d", m.Batch, m.Context, m.Dim, m.Vocab),
			Status: schema.StatusOK, rec: v})
	}
	return rs
}

// source is what the diff's heading says of the input: its commit and
// when it ran.
func (rs *Rows) source(name string) DiffSource {
	env, start := rs.environment()
	return DiffSource{Name: name, Commit: env.VCSRevision, Modified: env.VCSModified, StartTime: start}
}

// environment is the build and machine the input measured, and when it
// began: a decode input's first record's.
func (rs *Rows) environment() (schema.Environment, string) {
	switch {
	case rs.Report != nil:
		return rs.Report.Environment, rs.Report.StartTime
	case len(rs.Decode) > 0:
		return rs.Decode[0].Environment, rs.Decode[0].StartTime
	}
	return schema.Environment{}, ""
}

// index is the rows, the first of each key, and the keys that repeat.
func (rs *Rows) index() (rows []*Row, dup []string) {
	seen := map[string]bool{}
	for _, r := range rs.All {
		if seen[r.Key] {
			dup = append(dup, r.Key)
			continue
		}
		seen[r.Key] = true
		rows = append(rows, r)
	}
	return rows, dup
}

func findRow(rows []*Row, key string) *Row {
	for _, r := range rows {
		if r.Key == key {
			return r
		}
	}
	return nil
}

// ok says whether the row has figures: a run whose repetitions all
// finished; a decode record always.
func (r *Row) ok() bool { return r.rec != nil || r.run.ok() }

// values are metric m's samples in the row, read through the registry:
// a run's repetitions (its summary's where it holds m); a decode
// record's runs where runs is set and it pooled them, else its passes
// (passes set), else its one figure. ok is false where the row has no
// such figure.
func (r *Row) values(m string, runs bool) (vals []float64, passes, ok bool) {
	if r.rec != nil {
		return r.rec.metric(m, runs)
	}
	s := r.run.metric(m)
	return s.values, false, s.exists
}

// measures says whether the row has metric m, finished or not: some
// sample or figure of it.
func (r *Row) measures(m string) bool {
	_, _, ok := r.values(m, true)
	return ok
}

// hasRuns says whether the row pooled several independent runs of
// metric m: a decode record of probe decode --runs N (a run's
// repetitions are its samples already).
func (r *Row) hasRuns(m string) bool { return r.rec != nil && r.rec.hasRuns(m) }

// comparable refuses two inputs whose rows cannot be matched: of
// different kinds, of different schema versions, or a decode side with
// no record.
func comparable(base, head *Rows, opt DiffOptions) error {
	if base.Kind != head.Kind {
		return fmt.Errorf("comparing %s with %s: base %s, head %s: compare like with like", base.Kind, head.Kind, opt.BaseName, opt.HeadName)
	}
	if base.Kind == metric.Run {
		if base.Report.Schema != head.Report.Schema {
			return fmt.Errorf("comparing reports: %w: base %s is %q, head %s is %q", ErrSchema, opt.BaseName, base.Report.Schema, opt.HeadName, head.Report.Schema)
		}
		return nil
	}
	if len(base.Decode) == 0 || len(head.Decode) == 0 {
		return fmt.Errorf("comparing decode results: base %s has %d %s, head %s %d: nothing to compare", opt.BaseName, len(base.Decode), plural(len(base.Decode), "record", "records"), opt.HeadName, len(head.Decode))
	}
	for _, rs := range []*Rows{base, head} {
		for _, r := range rs.Decode {
			if r.Schema != base.Decode[0].Schema {
				return fmt.Errorf("comparing decode results: %w: records of versions %q and %q (base %s, head %s)", ErrSchema, base.Decode[0].Schema, r.Schema, opt.BaseName, opt.HeadName)
			}
		}
	}
	return nil
}

// matchError says why two rows of one key are not compared: runs at
// different presets ("" when they are comparable). A decode record's
// preset is a setting the diff warns about instead (settingWarnings):
// its shape, in the key, is what must be equal.
func matchError(b, h *Row) string {
	if b.run != nil && b.run.Config.Preset != h.run.Config.Preset {
		return fmt.Sprintf("%s (base %q, head %q)", b.Key, b.run.Config.Preset, h.run.Config.Preset)
	}
	return ""
}

// exactness says whether metric m of two rows is compared exactly, and
// the warnings of a registered exact metric that is not. For runs: the
// registry's Exact, where both sides ran at one seed and each has two
// or more repetitions (one run is one draw: 2,085 then 2,086 allocations
// a step, one run each of one commit). For decode records: the
// registry's Exact with one value a side (one process counts them over
// every pass), and device_peak_bytes where both took it from the ledger
// (decodeExact).
func exactness(m string, b, h *Row, nb, nh int) (bool, []string) {
	if b.rec != nil {
		return decodeExact(m, b.rec, h.rec), nil
	}
	if !isExact(m) {
		return false, nil
	}
	switch bc, hc := b.run.Config, h.run.Config; {
	case bc.Seed != hc.Seed:
		return false, []string{fmt.Sprintf("seeds differ (%d, %d): compared as a measurement", bc.Seed, hc.Seed)}
	case nb < 2 || nh < 2:
		return false, []string{fmt.Sprintf("n=%d+%d: exact only where 2 or more repetitions a side agree: compared as a measurement", nb, nh)}
	}
	return true, nil
}

// sweepOf is the configuration's sweep values in the diff: a run's own;
// for a decode record, those of its settings among axes (the settings
// that vary among the matched pairs, varyingAxes), nil when none vary.
func sweepOf(r *Row, axes []string) map[string]string {
	if r.rec == nil {
		return r.Sweep
	}
	if len(axes) == 0 {
		return nil
	}
	all := decodeSetting(r.rec.DecodeRecord)
	out := map[string]string{}
	for _, k := range axes {
		out[k] = all[k]
	}
	return out
}
