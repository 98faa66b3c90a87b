package report

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"memprobe/internal/table"
	"memprobe/metric"
	"memprobe/schema"
	"memprobe/stats"
)

// Cross-commit comparison (`probe diff`): the pipeline is
//
//  1. ReportRows and DecodeRows make an input's configurations rows of
//     one kind (rows.go): a run report's runs, keyed by plan, phase and
//     sweep values, or decode records, keyed by mode, device and shape;
//  2. Compare matches the rows of two inputs of one kind by key, refusing
//     inputs of different kinds or schema versions and matched runs of
//     different presets, and for each metric (the registry's defaults of
//     the kind, metric.Defaults, unless named) of each matched pair
//     compares the two sides' samples (compareMetric): a Mann-Whitney U
//     test (stats.Compare, as benchstat does) for measured metrics, exact
//     equality for the deterministic ones (metric.Def.Exact) where the
//     kind's rule allows it (exactness);
//  3. Diff.Breaches checks the changes against --fail-on thresholds
//     (ParseThresholds), and WriteDiff renders the diff (diffrender.go).
//
// Statistical caveats (too few repetitions, a deterministic metric that
// varies, samples that are passes of one process) travel beside each row
// as warnings. A regression is what the runs establish: where the U test
// can decide at the sizes given, its verdict; where it cannot (3+3: its
// smallest p is 0.100), every head repetition past every base repetition
// by more than the limit (Threshold.Apart, as asv's continuous asks that
// the results not overlap). A change of the medians past a limit that the
// runs do not establish is undecided: printed with the metric's spread
// and the repetitions that would decide it, failing only with --strict.
// The statistics are package stats'; the words are this package's.

// DefaultAlpha is the significance level of the U test, as benchstat's.
const DefaultAlpha = stats.DefaultAlpha

// isExact says whether the registry calls metric m exact (metric.Def.Exact):
// a figure the configuration fixes (at a fixed seed), compared exactly,
// any change shown, without statistics, as long as each side's
// repetitions agree (diffValues).
func isExact(m string) bool {
	d, err := metric.Lookup(m)
	return err == nil && d.Exact
}

// DiffOptions choose what Compare compares.
type DiffOptions struct {
	// Metrics are the metrics to compare (registered names, unit in the
	// name); nil means the registry's defaults of the inputs' kind
	// (metric.Defaults). A metric named here or in Extra
	// that no configuration of either side measured is refused (an
	// UnmeasuredError); one that no matched configuration has on both
	// sides is left out of the rows, with a warning. A default metric a
	// configuration lacks is left out of its rows silently.
	Metrics []string
	// Extra are compared too, after Metrics (the metrics of --fail-on);
	// one already in Metrics is not repeated.
	Extra []string
	// Alpha is the significance level; 0 means DefaultAlpha.
	Alpha float64
	// BaseName and HeadName label the reports (their file names).
	BaseName, HeadName string
}

// Diff is two inputs of one kind (run reports, decode results) compared
// configuration by configuration.
type Diff struct {
	Base  DiffSource `json:"base"`
	Head  DiffSource `json:"head"`
	Alpha float64    `json:"alpha"`
	// Configs are the configurations both reports ran, in the base's
	// order; never nil.
	Configs []ConfigDiff `json:"configs"`
	// OnlyBase and OnlyHead are the keys of configurations only one
	// report has; never nil.
	OnlyBase []string `json:"only_base"`
	OnlyHead []string `json:"only_head"`
	// Warnings are caveats about the whole comparison; never nil.
	Warnings []string `json:"warnings"`
}

// DiffSource says where one side's figures come from.
type DiffSource struct {
	Name      string `json:"name"`
	Commit    string `json:"commit"`
	Modified  bool   `json:"modified"`
	StartTime string `json:"start_time"`
}

// ConfigDiff is one configuration both reports ran.
type ConfigDiff struct {
	// Key is "plan/phase" and the sweep values ("threads/P6 threads=7").
	Key   string            `json:"key"`
	Plan  string            `json:"plan"`
	Phase string            `json:"phase"`
	Sweep map[string]string `json:"sweep,omitempty"`
	// BaseStatus and HeadStatus are the runs' statuses; Rows are empty
	// unless both have figures.
	BaseStatus schema.Status `json:"base_status"`
	HeadStatus schema.Status `json:"head_status"`
	// Rows are the metrics in the order asked for; never nil.
	Rows []MetricDiff `json:"rows"`
	// HeadLacks are the metrics asked for that base measured and head
	// did not (both finished): not compared, and a breach of a --fail-on
	// limit on them, which cannot be checked.
	HeadLacks []string `json:"head_lacks,omitempty"`
}

// MetricDiff is one metric of one configuration on both sides.
type MetricDiff struct {
	Metric string `json:"metric"`
	// Exact is set for a deterministic metric: no statistics, any change
	// counts.
	Exact bool     `json:"exact"`
	Base  DiffSide `json:"base"`
	Head  DiffSide `json:"head"`
	// Delta is head − base of the medians; Pct the same in percent of
	// base (NaN, written null in JSON, when base is 0).
	Delta float64  `json:"delta"`
	Pct   *float64 `json:"pct"`
	// P is the U test's p-value (nil when Exact); Significant says the
	// change is real: P < alpha, or any change of an exact metric.
	P           *float64 `json:"p"`
	Significant bool     `json:"significant"`
	// MinP is the smallest p the U test can give at these sizes
	// (stats.MinP; 0 when Exact); Undecided says it is not below alpha,
	// so that no change can be significant: only ranges apart establish
	// one (Established, Threshold.Apart).
	MinP      float64 `json:"min_p,omitempty"`
	Undecided bool    `json:"undecided,omitempty"`
	// Established says the runs establish the medians' change
	// (stats.Comparison.Established): Significant where the U test can
	// decide, else ranges apart by more than their spread; any change of
	// an exact metric.
	Established bool `json:"established,omitempty"`
	// Noise says the medians' change is no measurable change
	// (stats.WithinNoise, the spread the larger of the two sides'
	// ranges).
	Noise bool `json:"noise,omitempty"`
	// Warnings are caveats beside the row; never nil.
	Warnings []string `json:"warnings"`
}

// DiffSide is a metric over one side's repetitions: the median and its
// confidence interval as the runner computes them (stats.Summarize).
type DiffSide struct {
	Values []float64 `json:"values"`
	N      int       `json:"n"`
	Median float64   `json:"median"`
	Lo     float64   `json:"ci_low"`
	Hi     float64   `json:"ci_high"`
}

// ConfigKey names a run for matching: plan/phase (or its name outside a
// plan) and its sweep values, axes in order.
func ConfigKey(r *schema.Run) string {
	k := r.Name
	if r.Plan != "" || r.Phase != "" {
		k = r.Plan + "/" + r.Phase
	}
	if p := sweepPoint(r.Sweep, ""); p != "" {
		k += " " + strings.ReplaceAll(p, ", ", " ")
	}
	return k
}

// Compare compares head's rows against base's, matched by key: for run
// reports (ReportRows) a ConfigDiff per plan, phase and sweep point; for
// decode records (DecodeRows) one of plan "decode" and phase the mode per
// mode, device and shape, its Sweep holding the settings (device, B, T,
// C, V, probs, pinned_host) that vary among the matched pairs, none in
// the usual case of two runs of one command. WriteDiff, Breaches and
// Significant read either alike. It refuses inputs of different kinds or
// schema versions, a decode side with no record, matched runs of
// different presets, and metrics named (opt.Metrics, Extra) that no row
// of either side measured (an UnmeasuredError) or that the registry does
// not have (a *metric.UnknownError).
func Compare(base, head *Rows, opt DiffOptions) (*Diff, error) {
	if err := comparable(base, head, opt); err != nil {
		return nil, err
	}
	defaults := metric.Defaults(base.Kind)
	d, metrics := newDiff(base.source(opt.BaseName), head.source(opt.HeadName), opt, defaults)
	baseRows, dupB := base.index()
	headRows, dupH := head.index()
	d.warnDuplicates(dupB, dupH)
	var pairs [][2]*Row
	var bad []string
	for _, b := range baseRows {
		h := findRow(headRows, b.Key)
		if h == nil {
			d.OnlyBase = append(d.OnlyBase, b.Key)
			continue
		}
		if e := matchError(b, h); e != "" {
			bad = append(bad, e)
			continue
		}
		pairs = append(pairs, [2]*Row{b, h})
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("comparing reports: configurations run at different presets are not comparable: %s", strings.Join(bad, ", "))
	}
	for _, h := range headRows {
		if findRow(baseRows, h.Key) == nil {
			d.OnlyHead = append(d.OnlyHead, h.Key)
		}
	}
	axes := varyingAxes(pairs)
	for _, p := range pairs {
		d.Configs = append(d.Configs, compareRows(p[0], p[1], axes, metrics, d.Alpha))
	}
	d.warnSettings(pairs)
	all := slices.Concat(baseRows, headRows)
	if err := checkMeasured(opt, base.Kind.String(), defaults, func(m string) bool {
		return slices.ContainsFunc(all, func(r *Row) bool { return r.measures(m) })
	}); err != nil {
		return nil, err
	}
	d.warnUnseen(opt)
	return d, nil
}

// warnSettings says in which settings outside the key matched rows
// differ: for runs, beyond the commit (warnConfigs); for decode records,
// preset, checkpoint and GEMM (settingWarnings), each warning once.
func (d *Diff) warnSettings(pairs [][2]*Row) {
	if len(pairs) == 0 || pairs[0][0].rec == nil {
		d.warnConfigs(pairs)
		return
	}
	for _, p := range pairs {
		for _, w := range settingWarnings(p[0].rec, p[1].rec) {
			if !slices.Contains(d.Warnings, w) {
				d.Warnings = append(d.Warnings, w)
			}
		}
	}
}

// warnConfigs says in which settings matched configurations differ
// beyond the commit (configDiffs): the figures compare those too, a 200 KB
// dataset against a 48 MB one. One warning per setting and pair of values,
// naming the configurations (or counting them past three).
func (d *Diff) warnConfigs(pairs [][2]*Row) {
	var order []string
	where := map[string][]string{}
	for _, p := range pairs {
		for _, w := range configDiffs(p[0].run, p[1].run) {
			if _, ok := where[w]; !ok {
				order = append(order, w)
			}
			where[w] = append(where[w], p[0].Key)
		}
	}
	for _, w := range order {
		keys := where[w]
		in := strings.Join(keys, ", ")
		if len(keys) > 3 {
			in = fmt.Sprintf("%d of %d configurations", len(keys), len(d.Configs))
		}
		d.Warnings = append(d.Warnings, fmt.Sprintf("%s in %s: the figures compare that too, not the commits alone", w, in))
	}
}

// configDiffs lists the settings of b's configuration that h's differs
// in, "data differs (base \"synthetic:200KB\", head \"synthetic:48MB\")":
// every field of schema.Config by its JSON path (the sweep values are
// equal, they matched), and the tokens of data the first repetitions read,
// which a text file's name does not show.
func configDiffs(b, h *runView) []string {
	bf, hf := flatten(b.Config), flatten(h.Config)
	if len(b.Repetitions) > 0 && len(h.Repetitions) > 0 {
		bf["data_tokens"] = strconv.Itoa(b.Repetitions[0].DataTokens)
		hf["data_tokens"] = strconv.Itoa(h.Repetitions[0].DataTokens)
	}
	var keys []string
	for k := range bf {
		keys = append(keys, k)
	}
	for k := range hf {
		if _, ok := bf[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var out []string
	for _, k := range keys {
		if bf[k] != hf[k] {
			out = append(out, fmt.Sprintf("%s differs (base %s, head %s)", k, bf[k], hf[k]))
		}
	}
	return out
}

// UnmeasuredError is the refusal of metrics named (DiffOptions.Metrics
// or Extra, probe history --metric) that no configuration of the inputs
// measured, finished or not: a diff or history of them would be a table
// of nothing, and a --fail-on limit on one would pass unchecked.
type UnmeasuredError struct {
	// Metrics are the names, in the order given.
	Metrics []string
	// Inputs names the files ("base a.json or head b.json"); Kind says
	// what they are: "run reports" or "decode results".
	Inputs, Kind string
	// Have are some metrics the inputs do measure (their default
	// metrics that some configuration has), for the error to suggest.
	Have []string
}

func (e *UnmeasuredError) Error() string {
	return fmt.Sprintf("%s %s: %s", plural(len(e.Metrics), "metric", "metrics"), strings.Join(e.Metrics, ", "), e.Detail())
}

// Detail is the error without the names: that no configuration of the
// inputs measured them, whose metric a name of the other kind of input
// is, and what the inputs measure instead.
func (e *UnmeasuredError) Detail() string {
	s := fmt.Sprintf("no configuration of %s (%s) measured %s", e.Inputs, e.Kind, plural(len(e.Metrics), "it", "them"))
	for _, m := range e.Metrics {
		switch run, decode := KnownMetric(m); {
		case e.Kind == "decode results" && run && !decode:
			s += "; " + m + " is a metric of run reports, not of decode results"
		case e.Kind == "run reports" && decode && !run:
			s += "; " + m + " is a metric of decode results, not of run reports"
		}
	}
	if len(e.Have) > 0 {
		s += "; they measure " + strings.Join(e.Have, ", ")
	}
	return s
}

// checkMeasured returns a *metric.UnknownError for a name opt names that
// the registry does not have (a usage error, listing the registered
// ones), else an UnmeasuredError for the metrics that measured says no
// configuration has; defaults, those measured, are the ones the error
// suggests.
func checkMeasured(opt DiffOptions, kind string, defaults []string, measured func(string) bool) error {
	inputs := "base " + opt.BaseName + " or head " + opt.HeadName
	for _, m := range slices.Concat(opt.Metrics, opt.Extra) {
		if _, err := metric.Lookup(m); err != nil {
			return err
		}
	}
	var missing []string
	for _, m := range slices.Concat(opt.Metrics, opt.Extra) {
		if !slices.Contains(missing, m) && !measured(m) {
			missing = append(missing, m)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return &UnmeasuredError{Metrics: missing, Inputs: inputs, Kind: kind, Have: slices.DeleteFunc(slices.Clone(defaults), func(m string) bool { return !measured(m) })}
}

// plural is one when n is 1, else many, after n: "1 regression".
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// KnownMetric says whether a run report (run) or a decode result
// (decode) can have a metric of that name at all, whatever it measured:
// whether the registry (memprobe/metric) has it for that kind. A name
// neither can have is a typo, refused before any file is read.
func KnownMetric(name string) (run, decode bool) {
	d, err := metric.Lookup(name)
	if err != nil {
		return false, false
	}
	return d.Of(metric.Run), d.Of(metric.Decode)
}

// newDiff starts a Diff of base and head with opt's significance level
// and the metrics to compare: opt.Metrics (defaults when none), then
// opt.Extra not already among them.
func newDiff(base, head DiffSource, opt DiffOptions, defaults []string) (*Diff, []string) {
	alpha := opt.Alpha
	if alpha == 0 {
		alpha = DefaultAlpha
	}
	metrics := slices.Clone(opt.Metrics)
	if len(metrics) == 0 {
		metrics = slices.Clone(defaults)
	}
	for _, m := range opt.Extra {
		if !slices.Contains(metrics, m) {
			metrics = append(metrics, m)
		}
	}
	return &Diff{Base: base, Head: head, Alpha: alpha, Configs: []ConfigDiff{},
		OnlyBase: []string{}, OnlyHead: []string{}, Warnings: []string{}}, metrics
}

// warnDuplicates says which configurations a side holds more than once.
func (d *Diff) warnDuplicates(dupBase, dupHead []string) {
	for _, k := range dupBase {
		d.Warnings = append(d.Warnings, fmt.Sprintf("base runs %s more than once: the first is compared", k))
	}
	for _, k := range dupHead {
		d.Warnings = append(d.Warnings, fmt.Sprintf("head runs %s more than once: the first is compared", k))
	}
}

// warnUnseen says which metrics the user named (--metric, --fail-on) no
// configuration has on both sides: left out, not compared as zeros.
func (d *Diff) warnUnseen(opt DiffOptions) {
	seen := map[string]bool{}
	for _, c := range d.Configs {
		for _, r := range c.Rows {
			seen[r.Metric] = true
		}
	}
	for _, m := range slices.Concat(opt.Metrics, opt.Extra) {
		if w := "no configuration has metric " + m + " on both sides"; !seen[m] && !slices.Contains(d.Warnings, w) {
			d.Warnings = append(d.Warnings, w)
		}
	}
}

// compareRows compares the metrics of two matched rows; none where
// either did not finish.
func compareRows(b, h *Row, axes, metrics []string, alpha float64) ConfigDiff {
	c := ConfigDiff{Key: b.Key, Plan: b.Plan, Phase: b.Phase, Sweep: sweepOf(b, axes),
		BaseStatus: b.Status, HeadStatus: h.Status, Rows: []MetricDiff{}}
	if !b.ok() || !h.ok() {
		return c
	}
	for _, m := range metrics {
		r, bok, hok := compareMetric(m, b, h, alpha)
		if bok && !hok {
			c.HeadLacks = append(c.HeadLacks, m)
		}
		if bok && hok {
			c.Rows = append(c.Rows, r)
		}
	}
	return c
}

// compareMetric compares metric m of two rows of one kind, as probe diff
// and probe history both do: a run's repetitions; a decode record's runs
// where both pooled several runs of this metric, else their passes
// (never one side's independent runs against the other's passes of one
// process, which a metric's runs can be absent from on one side: a busy
// figure a run could not time), with the caveat of passes and of tiny
// allocations; exactly where exactness says so. bok and hok say whether
// each side has the metric.
func compareMetric(m string, b, h *Row, alpha float64) (r MetricDiff, bok, hok bool) {
	runs := b.hasRuns(m) && h.hasRuns(m)
	bv, bPasses, bok := b.values(m, runs)
	hv, hPasses, hok := h.values(m, runs)
	if !bok || !hok {
		return MetricDiff{}, bok, hok
	}
	exact, warn := exactness(m, b, h, len(bv), len(hv))
	if bPasses || hPasses {
		warn = append(warn, passesWarning)
	}
	r = diffValues(m, bv, hv, exact, alpha, warn)
	if m == "host_allocs_per_token" && r.Delta != 0 && math.Abs(r.Delta) < tinyAllocsNoise && r.Base.Median != 0 && r.Head.Median != 0 {
		r.Significant, r.Established, r.Noise = false, false, true
		r.Warnings = append(r.Warnings, tinyAllocsWarning)
	}
	return r, true, true
}

// diffValues compares one metric's values on the two sides.
func diffValues(name string, base, head []float64, exact bool, alpha float64, warn []string) MetricDiff {
	r := MetricDiff{Metric: name, Exact: exact, Base: sideOf(base), Head: sideOf(head), Warnings: []string{}}
	r.Warnings = append(r.Warnings, warn...)
	r.Delta = r.Head.Median - r.Base.Median
	if r.Base.Median != 0 {
		pct := 100 * r.Delta / math.Abs(r.Base.Median)
		r.Pct = &pct
	}
	if exact {
		// A metric the configuration fixes gives one value however many
		// repetitions. Where the repetitions of one build disagree, it is
		// not fixed here (allocations the tiny allocator packs into shared
		// blocks, a sync.Pool, work timed against the step), and a change
		// of the medians would be noise called a regression: it is then
		// compared as a measurement, and the row says why.
		var varies []string
		for _, s := range []struct {
			name string
			v    []float64
		}{{"base", base}, {"head", head}} {
			if lo, hi := slices.Min(s.v), slices.Max(s.v); lo != hi {
				varies = append(varies, fmt.Sprintf("%s to %s in %s", everyDigit(lo), everyDigit(hi), s.name))
			}
		}
		if varies == nil {
			r.Significant = r.Delta != 0
			r.Established = r.Significant
			return r
		}
		r.Exact = false
		r.Warnings = append(r.Warnings, fmt.Sprintf("varies between repetitions of one build (%s): compared as a measurement, not exactly", strings.Join(varies, ", ")))
	}
	cmp := stats.Compare(base, head, alpha)
	r.P = &cmp.P
	r.Significant, r.MinP, r.Undecided, r.Noise, r.Established = cmp.Significant, cmp.MinP, cmp.Unjudged, cmp.Noise, cmp.Established
	for _, w := range cmp.Warnings {
		if u := (*stats.Unjudged)(nil); errors.As(w, &u) {
			r.Warnings = append(r.Warnings, fmt.Sprintf("n=%d+%d: the U test cannot reach p<%g (smallest p %.3f): only ranges apart (%d or more a side) establish a change", u.N1, u.N2, u.Alpha, u.MinP, stats.MinApart))
		}
	}
	return r
}

// everyDigit writes x with every digit it has, grouped: rounded as the
// table rounds, 6,143.5 to 6,144 would read "6,144 to 6,144".
func everyDigit(x float64) string { return table.GroupDigits(strconv.FormatFloat(x, 'f', -1, 64)) }

// sideOf summarises values as the runner does (stats.Summarize): the
// median and its distribution-free interval, clamped to [min, max].
func sideOf(vals []float64) DiffSide {
	s := DiffSide{Values: slices.Clone(vals), N: len(vals)}
	if len(vals) == 0 {
		s.Values = []float64{}
		return s
	}
	sm := stats.Summarize(vals)
	s.Median, s.Lo, s.Hi = sm.Median, sm.Lo, sm.Hi
	return s
}

// Breach is a change past a --fail-on threshold, or a configuration or
// metric the thresholds cannot be checked on (Reason).
type Breach struct {
	Config    string
	Row       MetricDiff
	Threshold Threshold
	// Reason, when set, says why Config could not be checked: it failed
	// in head, head did not run it, or head did not measure a metric with
	// a limit; Row and Threshold are then empty. Or, with Undecided, why
	// the runs do not establish the change of Row's medians past
	// Threshold: the U test's p, or ranges not apart by the limit.
	Reason    string
	Undecided bool
	// Spread is, for an Undecided breach, the larger side's range in
	// percent of base's median; Need the repetitions a side that would
	// decide the change (stats.Repetitions).
	Spread float64
	Need   int
}

// String is the breach in one line, for the CI log.
func (b Breach) String() string {
	if b.Undecided {
		s := fmt.Sprintf("%s %s: %s -> %s (medians %s), limit %s: %s", b.Config, b.Row.Metric,
			formatValue(b.Row.Metric, b.Row.Base.Median), formatValue(b.Row.Metric, b.Row.Head.Median), formatPct(b.Row), b.Threshold, b.Reason)
		if b.Row.Base.N >= stats.MinApart && b.Row.Head.N >= stats.MinApart && b.Row.Base.Median != 0 {
			s += fmt.Sprintf("; the metric spreads %.1f %% run to run", b.Spread)
		}
		return s + fmt.Sprintf("; about %d repetitions a side would decide it", b.Need)
	}
	if b.Reason != "" {
		return b.Config + ": " + b.Reason
	}
	established := b.Row
	established.Established = true // by the limit (Threshold.Established), whatever the row says
	return fmt.Sprintf("%s %s: %s -> %s (%s), limit %s", b.Config, b.Row.Metric,
		formatValue(b.Row.Metric, b.Row.Base.Median), formatValue(b.Row.Metric, b.Row.Head.Median),
		formatChange(established), b.Threshold)
}

// Breaches are the rows whose change passes a threshold, in the diff's
// order. A measured metric breaches when the runs establish its change
// past the limit (Threshold.Established): significant where the U test
// can decide, else ranges apart by the limit. A change of the medians past
// the limit that the runs do not establish is a Breach that is Undecided
// (with the reason, the spread and the repetitions that would decide
// it), unless it is within the noise floor (stats.WithinNoise); the
// caller decides whether it fails (probe diff --strict). A deterministic
// metric breaches on any change past the limit. With thresholds, what
// they cannot be checked on breaches too, so that a gate never passes
// unchecked: a configuration that finished in base and not in head
// (failed, timed out, killed, skipped), one that head did not run (only
// in base: a partial or sharded head), and a metric with a limit that
// base measured and head did not. A configuration only head ran, or that
// did not finish in base, is no breach. No thresholds, no breaches.
func (d *Diff) Breaches(ths []Threshold) []Breach {
	if len(ths) == 0 {
		return nil
	}
	var out []Breach
	for _, c := range d.Configs {
		if c.BaseStatus == schema.StatusOK && c.HeadStatus != schema.StatusOK {
			out = append(out, Breach{Config: c.Key, Reason: fmt.Sprintf("finished in base, %s in head: --fail-on cannot check it", c.HeadStatus)})
			continue
		}
		for _, m := range c.HeadLacks {
			if slices.ContainsFunc(ths, func(t Threshold) bool { return t.Metric == m }) {
				out = append(out, Breach{Config: c.Key, Reason: fmt.Sprintf("%s measured in base, not in head: --fail-on cannot check it", m)})
			}
		}
		for _, r := range c.Rows {
			for _, t := range ths {
				if t.Metric != r.Metric || !t.Breached(r) {
					continue
				}
				switch {
				case t.Established(r):
					out = append(out, Breach{Config: c.Key, Row: r, Threshold: t})
				case !r.Noise:
					out = append(out, d.undecided(c.Key, r, t))
				}
			}
		}
	}
	for _, k := range d.OnlyBase {
		out = append(out, Breach{Config: k, Reason: "only in base, head did not run it: --fail-on cannot check it"})
	}
	return out
}

// undecided is the Breach of r's medians past t that the runs do not
// establish: why, the spread and the repetitions that would decide it.
func (d *Diff) undecided(key string, r MetricDiff, t Threshold) Breach {
	b := Breach{Config: key, Row: r, Threshold: t, Undecided: true,
		Need: stats.Repetitions(r.Base.Values, r.Head.Values, r.Delta, d.Alpha)}
	if r.Base.Median != 0 {
		b.Spread = 100 * max(stats.Spread(r.Base.Values), stats.Spread(r.Head.Values)) / math.Abs(r.Base.Median)
	}
	switch {
	case !r.Undecided:
		p := 1.0
		if r.P != nil {
			p = *r.P
		}
		b.Reason = fmt.Sprintf("n=%d+%d, the U test does not establish it (p %.3f, not below %g)", r.Base.N, r.Head.N, p, d.Alpha)
	case r.Base.N < stats.MinApart || r.Head.N < stats.MinApart:
		b.Reason = fmt.Sprintf("n=%d+%d, too few repetitions to measure the noise (the U test cannot decide, and ranges need %d a side)", r.Base.N, r.Head.N, stats.MinApart)
	default:
		b.Reason = fmt.Sprintf("n=%d+%d, the U test cannot decide (smallest p %.3f) and the ranges (%s to %s, %s to %s) are not apart by the limit",
			r.Base.N, r.Head.N, r.MinP, formatValue(r.Metric, slices.Min(r.Base.Values)), formatValue(r.Metric, slices.Max(r.Base.Values)),
			formatValue(r.Metric, slices.Min(r.Head.Values)), formatValue(r.Metric, slices.Max(r.Head.Values)))
	}
	return b
}

// Significant counts the rows with a significant change of the named
// metrics (all metrics when none are named).
func (d *Diff) Significant(metrics ...string) int {
	n := 0
	for _, c := range d.Configs {
		for _, r := range c.Rows {
			if r.Significant && (len(metrics) == 0 || slices.Contains(metrics, r.Metric)) {
				n++
			}
		}
	}
	return n
}
