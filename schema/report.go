package schema

// ReportVersion names the format of Report.
const ReportVersion = "memprobe.report/v1"

// Report is what the experiment runner (`probe run`) writes: many
// configurations, each run in fresh child processes one or more times
// (repetitions), with the environment they all ran in.
type Report struct {
	// Schema is ReportVersion.
	Schema      string      `json:"schema"`
	Environment Environment `json:"environment"`
	// CommandLine is the runner's os.Args; each repetition's result has
	// its child's own.
	CommandLine []string `json:"command_line"`
	// StartTime and EndTime bracket the whole run, RFC 3339.
	StartTime string `json:"start_time"`
	EndTime   string `json:"end_time"`
	// Runs are the configurations in the order they ran; never nil.
	Runs []Run `json:"runs"`
	// Warnings are caveats about the whole run (a noisy machine, a
	// configuration that was not comparable); never nil.
	Warnings []string `json:"warnings"`
	// Shard says which part of a split run this report is (probe run
	// --shard); absent in an unsharded run and in reports written before
	// it was added.
	Shard *Shard `json:"shard,omitempty"`
}

// Shard identifies one shard of a split run, so that probe merge joins
// only shards of one plan and finds the missing ones.
type Shard struct {
	// Index and Count are I and N of --shard I/N (0 <= I < N).
	Index int `json:"index"`
	Count int `json:"count"`
	// Source is where I and N came from: "flag", or the scheduler's
	// variable (JOB_COMPLETION_INDEX, SLURM_ARRAY_TASK_ID, CI_NODE_INDEX).
	Source string `json:"source"`
	// Plan names what ran (the plan file's name, or the built-in plans);
	// Configurations counts the whole plan's configurations, every
	// shard's; PlanDigest is the SHA-256 of their names and scales (and a
	// plan file's commands), equal in every shard of one plan.
	Plan           string `json:"plan"`
	Configurations int    `json:"configurations"`
	PlanDigest     string `json:"plan_digest"`
}

// Status is how a configuration's run ended.
type Status string

// The statuses of a Run.
const (
	StatusOK      Status = "ok"      // every repetition finished and wrote its result
	StatusFailed  Status = "failed"  // a repetition exited non-zero or wrote no readable result
	StatusTimeout Status = "timeout" // a repetition ran past its time limit and was stopped
	StatusKilled  Status = "killed"  // a repetition died of a signal (out of memory, interrupted)
	StatusSkipped Status = "skipped" // not run: its predicted peak RSS is above --mem-limit
)

// Valid reports whether s is one of the statuses above.
func (s Status) Valid() bool {
	switch s {
	case StatusOK, StatusFailed, StatusTimeout, StatusKilled, StatusSkipped:
		return true
	}
	return false
}

// Run is one configuration of a Report.
type Run struct {
	// Name is how tables label the configuration: the result's label,
	// "<plan>-<phase>", or one the runner gives.
	Name string `json:"name"`
	// Plan and Phase repeat Config.Plan and Config.Phase for readers that
	// group by them.
	Plan  string `json:"plan"`
	Phase string `json:"phase"`
	// Description is what the phase changes, in one line (the plan's
	// phase description); "" outside a plan.
	Description string `json:"description"`
	Config      Config `json:"config"`
	Status      Status `json:"status"`
	// Reason says why the status is not ok ("" when it is): the exit
	// status, the signal, the limit passed, the last line of stderr.
	Reason string `json:"reason"`
	// Repetitions are the results of the repetitions that finished, in
	// the order they ran; never nil (empty when none finished). Each is a
	// whole Result of ResultVersion.
	Repetitions []Result `json:"repetitions"`
	// Outside are the parent's measurements of every repetition's child
	// process, finished or not, in the order they ran; never nil.
	Outside []Outside `json:"outside"`
	Summary Summary   `json:"summary"`

	// Claim is what the design note claims for this phase, in its words;
	// Expect is the checkable part of it (empty when the claim has none).
	Claim  string        `json:"claim"`
	Expect []Expectation `json:"expect"`
	// Scale says at which scale the configuration ran and why, when a
	// plan's before state is too costly at the full scale (e.g. "tiny
	// preset: the naive GEMM takes 42 s a step at seed").
	Scale string `json:"scale"`
	// Sweep is the swept axes' values of this configuration (axis name →
	// value, e.g. "threads" → "63"); nil when the run swept nothing.
	Sweep map[string]string `json:"sweep,omitempty"`
	// PredictedPeakRSSBytes is the analytical model's prediction of the
	// child's memory (instrument/memmodel, before it started).
	PredictedPeakRSSBytes int64 `json:"predicted_peak_rss_bytes"`

	// The fields below are a plan file's (probe run --plan-file), absent
	// for the built-in plans. Index is the configuration's position in
	// the whole plan, before sharding; PhaseIndex the phase's position in
	// the plan (0: the first, which "before" claims compare with), for
	// phases not named before, P1, P2, ...
	Index      *int `json:"index,omitempty"`
	PhaseIndex *int `json:"phase_index,omitempty"`
	// Command is the phase's program and arguments, and Env the variables
	// it sets ("" when it removes one), as the plan file gives them with
	// its variables expanded, except the built-in {probe} and {tmp}.
	Command []string          `json:"command,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
}

// Expectation is one checkable claim: the change of one metric (a result
// field, unit in its name) against the previous phase or the before state.
// Exactly one of Ratio and Delta is set.
type Expectation struct {
	Metric string `json:"metric"`
	// Versus is "previous" (the phase before this one) or "before" (the
	// plan's before state), or "absolute": a claimed value, in Delta.
	Versus string `json:"versus"`
	// Ratio is the claimed factor new/old (63 for "63x speedup", 0.1 for
	// "10x less"); Delta the claimed change new − old in the metric's
	// unit (−455e6 for "save 455 MB" of peak_rss_bytes).
	Ratio float64 `json:"ratio,omitempty"`
	Delta float64 `json:"delta,omitempty"`
}

// Outside is what the parent saw of one repetition's child process.
type Outside struct {
	Repetition int `json:"repetition"`
	// ExitCode is the child's exit status (-1 when a signal ended it, then
	// named in Signal); Status and Reason as in Run, for this repetition.
	ExitCode int    `json:"exit_code"`
	Signal   string `json:"signal,omitempty"`
	Status   Status `json:"status"`
	Reason   string `json:"reason"`
	// WallSeconds is from start to exit; UserSeconds and SystemSeconds
	// and MaxRSSBytes come from wait4's rusage (ru_maxrss, KiB × 1024).
	WallSeconds   float64 `json:"wall_seconds"`
	UserSeconds   float64 `json:"user_seconds"`
	SystemSeconds float64 `json:"system_seconds"`
	MaxRSSBytes   int64   `json:"max_rss_bytes"`
	// PeakRSSBytes and PeakVSZBytes are the parent's sampler's maxima of
	// the child's VmRSS and VmSize; Timeline its points (never nil).
	PeakRSSBytes int64          `json:"peak_rss_bytes"`
	PeakVSZBytes int64          `json:"peak_vsz_bytes"`
	Timeline     []SamplerPoint `json:"timeline"`
}

// Summary condenses a Run's repetitions: per metric the median and its
// distribution-free confidence interval (run/runner/stats.go, with
// golang.org/x/perf/benchmath).
type Summary struct {
	// Repetitions is how many repetitions were asked for; Completed how
	// many wrote a result (len(Run.Repetitions)).
	Repetitions int `json:"repetitions"`
	Completed   int `json:"completed"`
	// Metrics summarise one result field each over the completed
	// repetitions, in a fixed order; never nil.
	Metrics []Metric `json:"metrics"`
	// Warnings are statistical caveats beside the figures (too few
	// repetitions, a large spread, an outlier), not failures; never nil.
	Warnings []string `json:"warnings"`
}

// Metric is one result field over a Run's repetitions.
type Metric struct {
	// Name is the Result's JSON field ("peak_rss_bytes",
	// "tokens_per_sec", ...); its unit is in the name.
	Name string `json:"name"`
	// Values are the field's value in each completed repetition, in
	// order; never nil.
	Values []float64 `json:"values"`
	// N, Median, Min and Max summarise Values (0 when N is 0).
	N      int     `json:"n"`
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	// CILow and CIHigh bound the median at Confidence (e.g. 0.95), as
	// golang.org/x/perf/benchmath computes it (a distribution-free
	// interval from order statistics; it widens to [min, max] or beyond
	// with few values, and then a Summary warning says so).
	CILow      float64 `json:"ci_low"`
	CIHigh     float64 `json:"ci_high"`
	Confidence float64 `json:"confidence"`
}
