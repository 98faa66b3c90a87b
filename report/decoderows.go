package report

import (
	"fmt"
	"strconv"

	"memprobe/metric"
	"memprobe/schema"
)

// The decode kind of rows (DecodeRows): what a decode record's key is,
// how its figures are read and what comparing two of them adds to
// Compare. Comparing decode results (`probe diff` on two files of `probe
// decode --json`) is Compare of DecodeRows. A decode result differs from a run
// report in where its samples come from: one process measured each mode
// once, so the only repeated figure is tokens/s, timed per pass; the
// other measured figures have one value a side, which the U test cannot
// call significant (diffValues says so beside the row), so a change of
// them past a --fail-on limit fails the gate unjudged, as in run reports.
// The counts a decode mode fixes for its shape are compared exactly, as a
// run's deterministic metrics are, even with one value a side: one
// process counts them over every pass.

// The decode figures a mode fixes for its shape (V, C, T, B, probs and
// pinned host memory), whatever the machine's speed, are exact in the
// registry (metric.Def.Exact): the device's synchronisations and
// launches, the program's allocations (decodebench counts the program's
// own, not the runtime's, and its tests hold prealloc and batch at 0),
// the bytes copied each way and the ledger's peak. They are compared
// exactly. One caveat: allocations are counted in heap blocks, so a mode
// that makes tiny ones can move by a block between runs of one build;
// such a change carries tinyAllocsWarning.

// A metric is compared over its runs (metric.Def.Runs) where both sides
// pooled several, else over its passes (Def.Passes).

// passesWarning goes beside a row compared over per-pass samples: the U
// test treats them as independent runs, which they are not (they share
// the process, its heap, its caches and its moment on the machine), so its
// p-value understates the noise between runs.
const passesWarning = "samples are the timed passes of one process, not independent runs: p understates run-to-run noise (probe decode --runs N measures runs)"

// decodeSetting is the part of a record's key that is not its mode: the
// axes a decode configuration can differ along besides the mode, as sweep
// values. pinned_host among them is fixed by the mode within one run
// (mixedPinned).
func decodeSetting(r *schema.DecodeRecord) map[string]string {
	m := r.Config.Model
	return map[string]string{
		"device": r.Device,
		"B":      strconv.Itoa(m.Batch), "T": strconv.Itoa(m.Context),
		"C": strconv.Itoa(m.Dim), "V": strconv.Itoa(m.Vocab),
		"probs":       strconv.FormatBool(r.Config.Probs),
		"pinned_host": strconv.FormatBool(r.Config.PinnedHost),
	}
}

// decodeView is a record with its key.
type decodeView struct {
	*schema.DecodeRecord
	key string
}

func newDecodeView(r *schema.DecodeRecord) *decodeView {
	return &decodeView{DecodeRecord: r, key: r.Key()}
}

// metric is the named figure's values, read through the registry
// (memprobe/metric): with runs, its per-run samples when the record has
// them; else its per-pass samples when it has them; else its one figure.
// passes says the values are per-pass samples; ok is false when the
// record has no such figure (a busy figure the device could not time, a
// name that is no decode metric).
func (v *decodeView) metric(name string, runs bool) (vals []float64, passes, ok bool) {
	d, err := metric.Lookup(name)
	if err != nil {
		return nil, false, false
	}
	if runs && d.Runs != nil {
		if vals := d.Runs(v.DecodeRecord); len(vals) > 0 {
			return vals, false, true
		}
	}
	if d.Passes != nil {
		if vals := d.Passes(v.DecodeRecord); len(vals) > 0 {
			return vals, true, true
		}
	}
	if d.Decode != nil {
		if x, ok := d.Decode(v.DecodeRecord); ok {
			return []float64{x}, false, true
		}
	}
	return nil, false, false
}

// figure is the record's own figure of the named metric (not its
// samples'), ok false where it has none.
func (v *decodeView) figure(name string) (float64, bool) {
	d, err := metric.Lookup(name)
	if err != nil || d.Decode == nil {
		return 0, false
	}
	return d.Decode(v.DecodeRecord)
}

// mixedPinned reports whether one mode appears among recs both with and
// without page-locked host buffers. Within one run pinned_host follows the
// mode (per-token-prealloc and batch use them, the other modes never), so
// it tells two configurations of one mode apart only when some mode has
// both values: only then must a label or a column name say it.
func mixedPinned(recs []*schema.DecodeRecord) bool {
	seen := map[string]bool{}
	for _, r := range recs {
		if p, ok := seen[r.Decode]; ok && p != r.Config.PinnedHost {
			return true
		}
		seen[r.Decode] = r.Config.PinnedHost
	}
	return false
}

// varyingAxes are the settings that take more than one value among the
// matched pairs: the table labels a configuration by its mode and these,
// so that two configurations of one mode never share a label. pinned_host
// is one where a mode has both values (mixedPinned).
func varyingAxes(pairs [][2]*Row) []string {
	if len(pairs) == 0 || pairs[0][0].rec == nil {
		return nil // a run's sweep values are in its key
	}
	values := map[string]map[string]bool{}
	recs := make([]*schema.DecodeRecord, len(pairs))
	for i, p := range pairs {
		recs[i] = p[0].rec.DecodeRecord
		for k, v := range decodeSetting(recs[i]) {
			if values[k] == nil {
				values[k] = map[string]bool{}
			}
			values[k][v] = true
		}
	}
	if !mixedPinned(recs) {
		delete(values, "pinned_host")
	}
	var axes []string
	for _, k := range sortedKeys(values) {
		if len(values[k]) > 1 {
			axes = append(axes, k)
		}
	}
	return axes
}

// settingWarnings name the settings outside the key in which two matched
// records differ: the comparison is still meaningful (the shape is the
// same), but its measured figures compare those settings as well as the
// builds.
func settingWarnings(b, h *decodeView) []string {
	var out []string
	for _, s := range []struct{ name, base, head string }{
		{"preset", b.Config.Preset, h.Config.Preset},
		{"checkpoint", b.Config.Checkpoint, h.Config.Checkpoint},
		{"gemm_used", b.Config.GEMMUsed, h.Config.GEMMUsed},
	} {
		if s.base != s.head {
			out = append(out, fmt.Sprintf("%s differs (base %q, head %q): the measured figures compare it too", s.name, s.base, s.head))
		}
	}
	return out
}

// hasRuns says whether the record pooled several runs of metric m.
func (v *decodeView) hasRuns(m string) bool {
	d, err := metric.Lookup(m)
	return err == nil && d.Runs != nil && len(d.Runs(v.DecodeRecord)) > 1
}

// tinyAllocsNoise bounds the noise in host_allocs_per_token between two
// runs of one build, and tinyAllocsWarning goes beside a change below it
// (not significant, so --fail-on does not trip on it). The allocation
// profile counts heap blocks, and the tiny allocations (under 16 B, no
// pointers) of per-token-copy and per-token-view share 16-byte blocks:
// where a window's first one lands in a block moves the count by a block
// or so over the window (per-token-view at the seed shape: 1.5 or 1.5001
// a token from run to run; micro, with 45 tokens a window: 1.5 or 1.511).
// The smallest real change is one more 8-byte allocation a token, which
// two tokens share a block for: +0.5. A mode at 0 has no tiny allocations
// to vary, so any change from 0 is real.
const (
	tinyAllocsNoise   = 0.5
	tinyAllocsWarning = "allocations are counted in heap blocks, which tiny ones (under 16 B) share: a change under 0.5 a token between modes that allocate is where blocks fall, not significant"
)

// decodeExact says whether metric m is compared exactly: a count the mode
// fixes (exact in the registry), or device_peak_bytes where both
// sides took it from the ledger (the cpu device, or cuda without NVML),
// where it is the ledger's peak and as fixed; NVML's peak is a
// measurement.
func decodeExact(m string, b, h *decodeView) bool {
	if m == "device_peak_bytes" {
		return b.DevicePeakSource == "ledger" && h.DevicePeakSource == "ledger"
	}
	return isExact(m)
}
