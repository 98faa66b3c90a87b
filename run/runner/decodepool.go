package runner

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"memprobe/metric"
	"memprobe/schema"
	"memprobe/stats"
)

// Pooling decode results: the passes of one `probe decode` share their
// process (its heap, its caches, its moment on the machine), so the spread
// between them understates the spread between runs, and a U test over
// them finds changes that are not there. Independent samples come from
// running the measurement again in fresh processes (probe decode --runs
// N); PoolDecode joins those runs' records, mode by mode, into records
// whose _runs arrays probe diff compares.

// PoolDecode joins decode results (sets, each the records of one `probe
// decode --json` file, named by names in errors) into one: records of the
// same mode, device, shape, probs and pinned host memory (DecodeRecord.Key) are
// pooled into one record of every run (PoolDecodeRecords), the others kept
// as they are, in the order they first appear. commandLine, when not nil, replaces the
// pooled records' command line. It refuses a set holding one key twice,
// sets from different builds or machines (pooling would mix what a diff
// separates) and records of one key that measured different
// configurations or disagree on a count the mode fixes.
func PoolDecode(names []string, sets [][]schema.DecodeRecord, commandLine []string) ([]schema.DecodeRecord, error) {
	if len(sets) == 0 {
		return nil, fmt.Errorf("pooling decode results: none")
	}
	type member struct {
		rec  *schema.DecodeRecord
		from string
	}
	var keys []string
	groups := map[string][]member{}
	var first *schema.DecodeRecord
	for i, set := range sets {
		if len(set) == 0 {
			return nil, fmt.Errorf("pooling decode results: %s has no record", names[i])
		}
		seen := map[string]bool{}
		for j := range set {
			r := &set[j]
			k := r.Key()
			if seen[k] {
				return nil, fmt.Errorf("pooling decode results: %s has two records of %s", names[i], k)
			}
			seen[k] = true
			if first == nil {
				first = r
			} else if err := sameBuild(first, r); err != nil {
				return nil, fmt.Errorf("pooling decode results: %s and %s: %w: pool the runs of one build on one machine", names[0], names[i], err)
			}
			if _, ok := groups[k]; !ok {
				keys = append(keys, k)
			}
			groups[k] = append(groups[k], member{r, names[i]})
		}
	}
	out := make([]schema.DecodeRecord, 0, len(keys))
	for _, k := range keys {
		g := groups[k]
		recs := make([]schema.DecodeRecord, len(g))
		seen := map[string]string{} // a run's passes → where it was first
		for i, m := range g {
			if i > 0 {
				if err := samePooled(g[0].rec, m.rec); err != nil {
					return nil, fmt.Errorf("pooling decode results: %s in %s and %s: %v", k, g[0].from, m.from, err)
				}
			}
			for _, id := range runIdentities(m.rec) {
				if first, ok := seen[id]; ok {
					return nil, fmt.Errorf("pooling decode results: %s in %s holds a run already pooled from %s (the same timed passes): pool each run once (a directory holding runs and their merge pools them twice)", k, m.from, first)
				}
				seen[id] = m.from
			}
			recs[i] = *m.rec
		}
		p := PoolDecodeRecords(recs)
		if commandLine != nil {
			p.CommandLine = slices.Clone(commandLine)
		}
		out = append(out, p)
	}
	return out, nil
}

// runIdentities names each run a record holds by its timed passes'
// tokens/s, bit for bit: two measurements never time every pass alike,
// so a run met twice is one file pooled twice (the per-run files and
// their merge, one file named twice), which would count its samples twice
// and make a U test find changes that are not there. A record whose
// passes do not split into runs of Config.Passes names none.
func runIdentities(r *schema.DecodeRecord) []string {
	n, passes := r.Config.Passes, r.TokensPerSecPasses
	if n < 1 || len(passes) == 0 || len(passes)%n != 0 {
		return nil
	}
	var ids []string
	for i := 0; i < len(passes); i += n {
		var b strings.Builder
		for _, x := range passes[i : i+n] {
			fmt.Fprintf(&b, "%x,", math.Float64bits(x))
		}
		ids = append(ids, b.String())
	}
	return ids
}

// sameBuild says how two records' builds or machines differ, or nil.
func sameBuild(a, b *schema.DecodeRecord) error {
	ea, eb := a.Environment, b.Environment
	switch {
	case a.Schema != b.Schema:
		return fmt.Errorf("%w: versions %q and %q", schema.ErrSchema, a.Schema, b.Schema)
	case ea.VCSRevision != eb.VCSRevision || ea.VCSModified != eb.VCSModified:
		return fmt.Errorf("built from commit %q (modified %v) and %q (modified %v)", ea.VCSRevision, ea.VCSModified, eb.VCSRevision, eb.VCSModified)
	case ea.Hostname != eb.Hostname || ea.CPUModel != eb.CPUModel || ea.LogicalCores != eb.LogicalCores:
		return fmt.Errorf("run on %s (%s, %d cores) and %s (%s, %d cores)", ea.Hostname, ea.CPUModel, ea.LogicalCores, eb.Hostname, eb.CPUModel, eb.LogicalCores)
	}
	return nil
}

// samePooled says how two records of one key differ where pooled runs
// must agree, or nil: the configuration measured, and the counts the mode
// fixes for its shape (the registry's exact decode metrics but the host's
// allocations, which tiny blocks move by a fraction between runs).
func samePooled(a, b *schema.DecodeRecord) error {
	ca, cb := a.Config, b.Config
	for _, f := range []struct {
		name string
		a, b any
	}{
		{"preset", ca.Preset, cb.Preset}, {"checkpoint", ca.Checkpoint, cb.Checkpoint},
		{"model", ca.Model, cb.Model}, {"seed", ca.Seed, cb.Seed},
		{"data", ca.Data, cb.Data}, {"data_seed", ca.DataSeed, cb.DataSeed},
		{"gemm", ca.GEMM, cb.GEMM}, {"gemm_used", ca.GEMMUsed, cb.GEMMUsed},
		{"passes", ca.Passes, cb.Passes}, {"check", ca.Check, cb.Check},
	} {
		if f.a != f.b {
			return fmt.Errorf("measured with %s %v and %v", f.name, f.a, f.b)
		}
	}
	for _, d := range metric.All() {
		if !d.Exact || d.Decode == nil || d.Name == "host_allocs_per_token" {
			continue
		}
		x, _ := d.Decode(a)
		y, _ := d.Decode(b)
		if x != y {
			return fmt.Errorf("%s %v and %v, where runs of one decode loop agree", d.Name, x, y)
		}
	}
	return nil
}

// PoolDecodeRecords pools records of one decode key and configuration
// (the caller checks they are: PoolDecode) into one record of all their
// runs; a single record is returned as it is. A record that pools runs
// itself contributes each of them.
//
//   - Runs counts the runs; the _runs arrays hold each run's figure, and
//     tokens_per_sec, host_wait_ns_per_token and the busy figures are
//     their medians (the busy figures only where every run has them).
//   - The _passes arrays are every run's passes, run after run.
//   - host_allocs_per_token is the median of the records' figures.
//   - The device's peak (and its reconciliation) is the highest run's: the
//     memory a run of this mode may need.
//   - The check is the worst: a failing one, else the largest |Δp|.
//   - Configuration, counts and buffers are the first record's (PoolDecode
//     has checked that the records agree on them), the start time the
//     earliest.
func PoolDecodeRecords(recs []schema.DecodeRecord) schema.DecodeRecord {
	if len(recs) == 1 {
		return recs[0]
	}
	p := recs[0]
	p.TokensPerSecRuns, p.HostWaitNsPerTokenRuns, p.DeviceBusyNsPerTokenRuns, p.DeviceBusyPctRuns = nil, nil, nil, nil
	p.TokensPerSecPasses, p.HostWaitNsPerTokenPasses, p.DeviceBusyPctPasses = nil, nil, nil
	timed, timedPasses := true, true
	var allocs []float64
	for i := range recs {
		r := &recs[i]
		tps, wait, busyNs, busyPct := runFigures(r)
		p.TokensPerSecRuns = append(p.TokensPerSecRuns, tps...)
		p.HostWaitNsPerTokenRuns = append(p.HostWaitNsPerTokenRuns, wait...)
		timed = timed && busyNs != nil && busyPct != nil
		p.DeviceBusyNsPerTokenRuns = append(p.DeviceBusyNsPerTokenRuns, busyNs...)
		p.DeviceBusyPctRuns = append(p.DeviceBusyPctRuns, busyPct...)

		p.TokensPerSecPasses = append(p.TokensPerSecPasses, r.TokensPerSecPasses...)
		p.HostWaitNsPerTokenPasses = append(p.HostWaitNsPerTokenPasses, r.HostWaitNsPerTokenPasses...)
		timedPasses = timedPasses && len(r.DeviceBusyPctPasses) == len(r.TokensPerSecPasses)
		p.DeviceBusyPctPasses = append(p.DeviceBusyPctPasses, r.DeviceBusyPctPasses...)

		allocs = append(allocs, r.HostAllocsPerToken)
		if r.DevicePeakBytes > p.DevicePeakBytes {
			p.DevicePeakBytes, p.DevicePeakSource, p.DeviceMemory = r.DevicePeakBytes, r.DevicePeakSource, r.DeviceMemory
		}
		if worseCheck(r.Check, p.Check) {
			p.Check = r.Check
		}
		if earlierTime(r.StartTime, p.StartTime) {
			p.StartTime = r.StartTime
		}
	}
	p.Runs = len(p.TokensPerSecRuns)
	p.TokensPerSec = stats.Median(p.TokensPerSecRuns)
	p.HostWaitNsPerToken = stats.Median(p.HostWaitNsPerTokenRuns)
	p.DeviceBusyNsPerToken, p.DeviceBusyPct = nil, nil
	if timed {
		busyNs, busyPct := stats.Median(p.DeviceBusyNsPerTokenRuns), stats.Median(p.DeviceBusyPctRuns)
		p.DeviceBusyNsPerToken, p.DeviceBusyPct = &busyNs, &busyPct
	} else {
		p.DeviceBusyNsPerTokenRuns, p.DeviceBusyPctRuns = nil, nil
	}
	if !timedPasses {
		p.DeviceBusyPctPasses = nil
	}
	p.HostAllocsPerToken = stats.Median(allocs)
	return p
}

// runFigures is each run's tokens/s, host wait and busy figures of r: its
// _runs arrays when it pools runs, else its own figures as one run. The
// busy figures are nil where a run could not time the device.
func runFigures(r *schema.DecodeRecord) (tps, wait, busyNs, busyPct []float64) {
	if r.Runs > 0 {
		busyNs, busyPct = r.DeviceBusyNsPerTokenRuns, r.DeviceBusyPctRuns
		if len(busyNs) != r.Runs || len(busyPct) != r.Runs {
			busyNs, busyPct = nil, nil
		}
		wait = r.HostWaitNsPerTokenRuns
		if len(wait) != r.Runs {
			wait = slices.Repeat([]float64{r.HostWaitNsPerToken}, r.Runs)
		}
		return r.TokensPerSecRuns, wait, busyNs, busyPct
	}
	if r.DeviceBusyNsPerToken != nil && r.DeviceBusyPct != nil {
		busyNs, busyPct = []float64{*r.DeviceBusyNsPerToken}, []float64{*r.DeviceBusyPct}
	}
	return []float64{r.TokensPerSec}, []float64{r.HostWaitNsPerToken}, busyNs, busyPct
}

// worseCheck says whether check c is worse than the worst so far: failing
// where that passed, else a larger |Δp|.
func worseCheck(c, worst *schema.DecodeCheck) bool {
	switch {
	case c == nil:
		return false
	case worst == nil:
		return true
	case c.Pass != worst.Pass:
		return !c.Pass
	}
	return c.MaxProbDiff > worst.MaxProbDiff
}

// earlierTime compares two RFC 3339 times; one that does not parse is
// never the earlier.
func earlierTime(a, b string) bool {
	ta, err := time.Parse(time.RFC3339, a)
	if err != nil {
		return false
	}
	tb, err := time.Parse(time.RFC3339, b)
	return err != nil || ta.Before(tb)
}
