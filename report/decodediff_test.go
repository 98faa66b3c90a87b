package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"memprobe/internal/golden"
	"memprobe/internal/table"
	"memprobe/metric"
	"memprobe/schema"
	"memprobe/schema/schematest"
)

var (
	decodeRec = schematest.Record
	speeds    = schematest.Speeds
)

// decodeSide is one probe decode --decode all: a record per mode at the
// given speeds, slowest mode first, at a head commit when head.
func decodeSide(head bool, tps map[string]float64) []schema.DecodeRecord {
	var recs []schema.DecodeRecord
	for i, mode := range []string{"per-token-copy", "per-token-view", "per-token-prealloc", "batch"} {
		shift := 0
		if head {
			shift = 3
		}
		r := decodeRec(mode, speeds(tps[mode], shift+i))
		if head {
			r.Environment.VCSRevision, r.StartTime = "d1ff5eed00000000000000000000000000000000", "2026-11-26T03:00:00Z"
		}
		recs = append(recs, r)
	}
	return recs
}

var decodeBaseSpeeds = map[string]float64{"per-token-copy": 12500, "per-token-view": 13750, "per-token-prealloc": 15000, "batch": 75000}

func compareDecode(t *testing.T, base, head []schema.DecodeRecord, opt DiffOptions) *Diff {
	t.Helper()
	if opt.BaseName == "" {
		opt.BaseName, opt.HeadName = "base.json", "head.json"
	}
	d, err := Compare(DecodeRows(base), DecodeRows(head), opt)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// row is the named metric's row of the configuration of mode; nil when
// there is none.
func row(d *Diff, mode, metric string) *MetricDiff {
	for _, c := range d.Configs {
		if c.Phase != mode {
			continue
		}
		for i := range c.Rows {
			if c.Rows[i].Metric == metric {
				return &c.Rows[i]
			}
		}
	}
	return nil
}

// TestDecodeDiffPinnedHost: records that differ only in pinned_host are
// different configurations: probe diff does not pair them (probe merge
// keeps them apart: run/runner's TestPoolDecodePinnedHost).
func TestDecodeDiffPinnedHost(t *testing.T) {
	base := []schema.DecodeRecord{decodeRec("batch", speeds(1000, 0))}
	head := []schema.DecodeRecord{decodeRec("batch", speeds(1000, 0))}
	head[0].Config.PinnedHost = true
	d, err := Compare(DecodeRows(base), DecodeRows(head), DiffOptions{BaseName: "staged.json", HeadName: "pinned.json"})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Configs) != 0 || len(d.OnlyBase) != 1 || len(d.OnlyHead) != 1 || !strings.HasSuffix(d.OnlyHead[0], ", pinned host)") {
		t.Errorf("diff of a staged and a pinned record: %d pairs, only base %v, only head %v; want them unpaired", len(d.Configs), d.OnlyBase, d.OnlyHead)
	}
	// In one run pinned_host follows the mode: two such runs pair mode by
	// mode with no axis in the labels, and a history names columns by
	// mode alone. Where one mode has both values, the labels and the
	// columns say which.
	run := func() []schema.DecodeRecord {
		rs := []schema.DecodeRecord{decodeRec("per-token-copy", speeds(100, 0)), decodeRec("batch", speeds(1000, 0))}
		rs[1].Config.PinnedHost = true
		return rs
	}
	d, err = Compare(DecodeRows(run()), DecodeRows(run()), DiffOptions{BaseName: "a.json", HeadName: "b.json"})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Configs) != 2 || d.Configs[0].Sweep != nil || d.Configs[1].Sweep != nil {
		t.Errorf("two runs with pinned host in batch: %d pairs, sweeps %v; want 2 pairs labelled by mode alone", len(d.Configs), d.Configs)
	}
	if !oneDecodeSetting([]HistoryEntry{{Decode: run()}, {Decode: run()}}) {
		t.Error("history of two runs with pinned host in batch: not one setting, want columns named by mode")
	}
	mixed := slices.Concat(run(), base)
	d, err = Compare(DecodeRows(mixed), DecodeRows(mixed), DiffOptions{BaseName: "a.json", HeadName: "b.json"})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Configs) != 3 || d.Configs[1].Sweep["pinned_host"] != "true" || d.Configs[2].Sweep["pinned_host"] != "false" {
		t.Errorf("batch pinned and staged on both sides: %d pairs, %+v; want 3, the batch ones labelled by pinned_host", len(d.Configs), d.Configs)
	}
	if oneDecodeSetting([]HistoryEntry{{Decode: mixed}}) {
		t.Error("history with batch pinned and staged: one setting, want columns named by key")
	}
}

// TestDecodeDiffExact: the deterministic counts are compared exactly; a
// mode that allocates once more a token is a change that +0 breaches,
// the unchanged counts are not.
func TestDecodeDiffExact(t *testing.T) {
	base, head := decodeSide(false, decodeBaseSpeeds), decodeSide(true, decodeBaseSpeeds)
	head[2].HostAllocsPerToken = 1 // per-token-prealloc
	d := compareDecode(t, base, head, DiffOptions{Extra: []string{"h2d_bytes", "ledger_peak_bytes"}})
	r := row(d, "per-token-prealloc", "host_allocs_per_token")
	if r == nil || !r.Exact || !r.Significant || r.Delta != 1 || r.P != nil {
		t.Fatalf("host_allocs_per_token of per-token-prealloc: %+v, want an exact significant +1", r)
	}
	for _, c := range d.Configs {
		for _, r := range c.Rows {
			if r.Metric == "tokens_per_sec" || r.Metric == "host_wait_ns_per_token" || r.Metric == "device_busy_pct" {
				if r.Exact {
					t.Errorf("%s %s compared exactly", c.Key, r.Metric)
				}
				continue
			}
			if !r.Exact {
				t.Errorf("%s %s: not compared exactly", c.Key, r.Metric)
			}
			if r.Significant != (c.Phase == "per-token-prealloc" && r.Metric == "host_allocs_per_token") {
				t.Errorf("%s %s: significant %v", c.Key, r.Metric, r.Significant)
			}
		}
	}
	if n := d.Significant("syncs_per_token", "launches_per_token", "device_peak_bytes", "h2d_bytes", "ledger_peak_bytes"); n != 0 {
		t.Errorf("%d unchanged counts significant", n)
	}
	ths, err := ParseThresholds("host_allocs_per_token:+0")
	if err != nil {
		t.Fatal(err)
	}
	br := d.Breaches(ths)
	if len(br) != 1 {
		t.Fatalf("breaches: %v, want one", br)
	}
	if got, want := br[0].String(), "decode per-token-prealloc on cpu (B=32 T=128 C=256 V=788, probs) host_allocs_per_token: 0 -> 1 (+1 (from 0)), limit host_allocs_per_token:+0"; got != want {
		t.Errorf("breach:\n got %s\nwant %s", got, want)
	}
}

// TestDecodeDiffTinyAllocs: a fraction of an allocation more between two
// modes that allocate is still a change, compared exactly, with the caveat
// that tiny allocations share heap blocks; none beside a change from 0 or
// of a whole allocation.
func TestDecodeDiffTinyAllocs(t *testing.T) {
	base, head := decodeSide(false, decodeBaseSpeeds), decodeSide(true, decodeBaseSpeeds)
	head[0].HostAllocsPerToken = 5      // per-token-copy, from 4
	head[1].HostAllocsPerToken = 1.5001 // per-token-view, from 1.5
	head[2].HostAllocsPerToken = 0.001  // per-token-prealloc, from 0
	d := compareDecode(t, base, head, DiffOptions{})
	for mode, tiny := range map[string]bool{"per-token-copy": false, "per-token-view": true, "per-token-prealloc": false} {
		r := row(d, mode, "host_allocs_per_token")
		if r == nil || !r.Exact || r.Significant == tiny || slices.Contains(r.Warnings, tinyAllocsWarning) != tiny {
			t.Errorf("%s: %+v, want an exact change, significant %v, the tiny-allocation caveat %v", mode, r, !tiny, tiny)
		}
	}
	if b := d.Breaches([]Threshold{{Metric: "host_allocs_per_token", Increase: true}}); len(b) != 2 {
		t.Errorf("host_allocs_per_token:+0 breaches %v; want per-token-copy's and per-token-prealloc's, not the tiny blocks of per-token-view", b)
	}
}

// TestDecodeDiffDevicePeak: device_peak_bytes is exact when both sides
// read it from the ledger, a measurement (one value a side) when NVML
// gave one.
func TestDecodeDiffDevicePeak(t *testing.T) {
	base, head := decodeSide(false, decodeBaseSpeeds), decodeSide(true, decodeBaseSpeeds)
	head[0].DevicePeakSource, head[0].DevicePeakBytes = "nvml", 300<<20
	d := compareDecode(t, base, head, DiffOptions{})
	if r := row(d, "per-token-copy", "device_peak_bytes"); r == nil || r.Exact || r.Significant || r.P == nil {
		t.Errorf("nvml peak: %+v, want a measurement, not significant at n=1+1", r)
	}
	if r := row(d, "batch", "device_peak_bytes"); r == nil || !r.Exact {
		t.Errorf("ledger peak: %+v, want exact", r)
	}
}

// TestDecodeDiffSlower: a head 30 % slower in every pass, at ±2 %, is
// a significant change that -10 % breaches; the passes' caveat goes
// beside the row.
func TestDecodeDiffSlower(t *testing.T) {
	slower := map[string]float64{}
	for m, v := range decodeBaseSpeeds {
		slower[m] = v
	}
	slower["per-token-view"] *= 0.7
	d := compareDecode(t, decodeSide(false, decodeBaseSpeeds), decodeSide(true, slower), DiffOptions{})
	r := row(d, "per-token-view", "tokens_per_sec")
	if r == nil || r.Exact || r.P == nil || !(*r.P < 0.05) || !r.Significant || r.Pct == nil || !(*r.Pct < -29 && *r.Pct > -31) {
		t.Fatalf("tokens_per_sec of per-token-view: %+v, want a significant -30 %%", r)
	}
	if r.Base.N != 10 || r.Head.N != 10 || !slices.Contains(r.Warnings, passesWarning) {
		t.Errorf("n=%d+%d, warnings %q: want the ten passes with their caveat", r.Base.N, r.Head.N, r.Warnings)
	}
	if n := d.Significant("tokens_per_sec"); n != 1 {
		t.Errorf("%d modes' tokens/s significant, want 1", n)
	}
	ths, err := ParseThresholds("tokens_per_sec:-10%")
	if err != nil {
		t.Fatal(err)
	}
	if br := d.Breaches(ths); len(br) != 1 || br[0].Config != "decode per-token-view on cpu (B=32 T=128 C=256 V=788, probs)" {
		t.Errorf("breaches of -10%%: %v, want per-token-view's", br)
	}
	ths, _ = ParseThresholds("tokens_per_sec:-40%")
	if br := d.Breaches(ths); len(br) != 0 {
		t.Errorf("breaches of -40%%: %v, want none", br)
	}
}

// TestDecodeDiffSame: the same speeds in another order and the same
// counts are no change at all.
func TestDecodeDiffSame(t *testing.T) {
	d := compareDecode(t, decodeSide(false, decodeBaseSpeeds), decodeSide(true, decodeBaseSpeeds), DiffOptions{})
	if len(d.Configs) != 4 || len(d.OnlyBase)+len(d.OnlyHead) != 0 || len(d.Warnings) != 0 {
		t.Fatalf("configs %d, only %q %q, warnings %q", len(d.Configs), d.OnlyBase, d.OnlyHead, d.Warnings)
	}
	for _, c := range d.Configs {
		if c.Plan != "decode" || c.Sweep != nil || len(c.Rows) != len(metric.Defaults(metric.Decode)) {
			t.Errorf("%s: plan %q, sweep %v, %d rows", c.Key, c.Plan, c.Sweep, len(c.Rows))
		}
	}
	if n := d.Significant(); n != 0 {
		t.Errorf("%d significant changes between equal sides", n)
	}
	ths, _ := ParseThresholds("tokens_per_sec:-10%,host_allocs_per_token:+0,syncs_per_token:+0")
	if br := d.Breaches(ths); len(br) != 0 {
		t.Errorf("breaches: %v", br)
	}
}

// TestDecodeDiffOnlyOneSide: a mode one side did not run, or ran at
// another setting, is listed on its side; a key twice on one side is
// warned about, the first compared.
func TestDecodeDiffOnlyOneSide(t *testing.T) {
	base, head := decodeSide(false, decodeBaseSpeeds), decodeSide(true, decodeBaseSpeeds)
	base = base[:3] // no batch
	head[0].Config.Probs = false
	head = append(head, head[1])
	d := compareDecode(t, base, head, DiffOptions{})
	if want := []string{"decode per-token-copy on cpu (B=32 T=128 C=256 V=788, probs)"}; !slices.Equal(d.OnlyBase, want) {
		t.Errorf("only base %q, want %q", d.OnlyBase, want)
	}
	if want := []string{"decode per-token-copy on cpu (B=32 T=128 C=256 V=788, no probs)", "decode batch on cpu (B=32 T=128 C=256 V=788, probs)"}; !slices.Equal(d.OnlyHead, want) {
		t.Errorf("only head %q, want %q", d.OnlyHead, want)
	}
	if len(d.Configs) != 2 || d.Configs[0].Phase != "per-token-view" || d.Configs[1].Phase != "per-token-prealloc" {
		t.Errorf("configs: %+v", d.Configs)
	}
	if want := []string{"head runs decode per-token-view on cpu (B=32 T=128 C=256 V=788, probs) more than once: the first is compared"}; !slices.Equal(d.Warnings, want) {
		t.Errorf("warnings %q, want %q", d.Warnings, want)
	}
}

// TestDecodeDiffAbsentMetric: a busy figure one side could not time leaves
// its row out of that configuration; a metric named that some
// configuration has but none on both sides is warned about, as Compare
// does; one that no configuration of either side has (not a number, not
// a decode figure) is refused, naming it.
func TestDecodeDiffAbsentMetric(t *testing.T) {
	base, head := decodeSide(false, decodeBaseSpeeds), decodeSide(true, decodeBaseSpeeds)
	head[1].DeviceBusyPct, head[1].DeviceBusyNsPerToken = nil, nil
	d := compareDecode(t, base, head, DiffOptions{})
	if row(d, "per-token-view", "device_busy_pct") != nil {
		t.Error("per-token-view has a device_busy_pct row without a head figure")
	}
	if row(d, "per-token-copy", "device_busy_pct") == nil {
		t.Error("per-token-copy lost its device_busy_pct row")
	}
	if len(d.Warnings) != 0 {
		t.Errorf("a default metric absent in one configuration: warnings %q", d.Warnings)
	}
	for i := range head {
		head[i].DeviceBusyPct = nil
	}
	_, err := Compare(DecodeRows(base), DecodeRows(head), DiffOptions{Metrics: []string{"device_busy_pct", "peak_rss_bytes", "d2h_bytes"}})
	if ue, ok := errors.AsType[*UnmeasuredError](err); !ok || !slices.Equal(ue.Metrics, []string{"peak_rss_bytes"}) ||
		!strings.Contains(err.Error(), "peak_rss_bytes is a metric of run reports, not of decode results") {
		t.Errorf("metrics no record has: got %v, want an UnmeasuredError of peak_rss_bytes", err)
	}
	// decode is a string field, no metric: the registry refuses it.
	_, err = Compare(DecodeRows(base), DecodeRows(head), DiffOptions{Metrics: []string{"device_busy_pct", "decode"}})
	if ue, ok := errors.AsType[*metric.UnknownError](err); !ok || ue.Name != "decode" {
		t.Errorf("decode: got %v, want a metric.UnknownError", err)
	}
	d = compareDecode(t, base, head, DiffOptions{Metrics: []string{"device_busy_pct", "d2h_bytes"}})
	want := []string{"no configuration has metric device_busy_pct on both sides"}
	if !slices.Equal(d.Warnings, want) {
		t.Errorf("warnings:\n got %q\nwant %q", d.Warnings, want)
	}
	for _, c := range d.Configs {
		if len(c.Rows) != 1 || c.Rows[0].Metric != "d2h_bytes" {
			t.Errorf("%s: rows %+v, want d2h_bytes alone", c.Key, c.Rows)
		}
	}
}

// TestDecodeDiffLookup: metrics are read through the registry, nested
// ones by their dotted names; a figure's samples are its passes, the
// single figure when a record has none; a figure's passes are no metric
// of their own.
func TestDecodeDiffLookup(t *testing.T) {
	base, head := decodeSide(false, decodeBaseSpeeds), decodeSide(true, decodeBaseSpeeds)
	base[3].TokensPerSecPasses = nil
	for _, s := range [][]schema.DecodeRecord{base, head} {
		s[0].DeviceMemory = &schema.DeviceMemory{ProcessPeakBytes: 200 << 20}
	}
	head[0].DeviceMemory.ProcessPeakBytes = 201 << 20
	d := compareDecode(t, base, head, DiffOptions{Metrics: []string{"tokens_per_sec", "device_memory.process_peak_bytes"}})
	if r := row(d, "batch", "tokens_per_sec"); r == nil || r.Base.N != 1 || r.Head.N != 10 {
		t.Errorf("batch tokens_per_sec without base passes: %+v, want n=1+10", r)
	}
	if r := row(d, "per-token-view", "tokens_per_sec"); r == nil || r.Base.N != 10 || !slices.Contains(r.Warnings, passesWarning) {
		t.Errorf("per-token-view tokens_per_sec: %+v", r)
	}
	if _, err := Compare(DecodeRows(base), DecodeRows(head), DiffOptions{Metrics: []string{"tokens_per_sec_passes"}}); err == nil {
		t.Error("tokens_per_sec_passes compared, want an error: no metric")
	}
	if r := row(d, "per-token-copy", "device_memory.process_peak_bytes"); r == nil || r.Delta != 1<<20 || r.Exact {
		t.Errorf("device_memory.process_peak_bytes: %+v", r)
	}
	if r := row(d, "per-token-view", "device_memory.process_peak_bytes"); r != nil {
		t.Errorf("device_memory.process_peak_bytes without device memory: %+v", r)
	}
}

// TestDecodeDiffSettings: a setting that varies among the matched
// configurations labels them (their sweep); settings outside the key
// that differ are warned about.
func TestDecodeDiffSettings(t *testing.T) {
	base, head := decodeSide(false, decodeBaseSpeeds), decodeSide(true, decodeBaseSpeeds)
	for _, s := range [][]schema.DecodeRecord{base, head} {
		s[1].Device = "cuda"
		s[3].Config.Model.Batch = 4
		s[3].Config.GEMMUsed = "blas"
	}
	head[3].Config.GEMMUsed = "go"
	d := compareDecode(t, base, head, DiffOptions{})
	want := []map[string]string{{"B": "32", "device": "cpu"}, {"B": "32", "device": "cuda"}, {"B": "32", "device": "cpu"}, {"B": "4", "device": "cpu"}}
	for i, c := range d.Configs {
		if !equalMaps(c.Sweep, want[i]) {
			t.Errorf("%s: sweep %v, want %v", c.Key, c.Sweep, want[i])
		}
	}
	if w := []string{`gemm_used differs (base "blas", head "go"): the measured figures compare it too`}; !slices.Equal(d.Warnings, w) {
		t.Errorf("warnings %q, want %q", d.Warnings, w)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestDecodeDiffRefuses: records of different versions, or a side with
// none.
func TestDecodeDiffRefuses(t *testing.T) {
	base, head := decodeSide(false, decodeBaseSpeeds), decodeSide(true, decodeBaseSpeeds)
	head[2].Schema = "memprobe.decode/v2"
	if _, err := Compare(DecodeRows(base), DecodeRows(head), DiffOptions{BaseName: "a.json", HeadName: "b.json"}); !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), "b.json") {
		t.Errorf("another version: %v", err)
	}
	if _, err := Compare(DecodeRows(base), DecodeRows(nil), DiffOptions{BaseName: "a.json", HeadName: "b.json"}); err == nil {
		t.Error("no head records: no error")
	}
}

// TestDecodeDiffGolden renders a small decode diff (per-token-view 30 %
// slower and allocating, batch only in base) as text and markdown; json
// reads back.
func TestDecodeDiffGolden(t *testing.T) {
	slower := map[string]float64{}
	for m, v := range decodeBaseSpeeds {
		slower[m] = v
	}
	slower["per-token-view"] *= 0.7
	base, head := decodeSide(false, decodeBaseSpeeds), decodeSide(true, slower)
	head[1].HostAllocsPerToken = 3
	head[2].DeviceBusyPct = nil
	head = head[:3]
	d := compareDecode(t, base, head, DiffOptions{BaseName: "decode-base.json", HeadName: "decode-head.json", Extra: []string{"h2d_bytes", "d2h_bytes"}})
	for _, f := range []string{"text", "markdown"} {
		var b bytes.Buffer
		if err := WriteDiff(&b, d, f); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, "decodediff."+f+".golden", b.Bytes())
	}
	var b bytes.Buffer
	if err := WriteDiff(&b, d, "json"); err != nil {
		t.Fatal(err)
	}
	var back Diff
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || len(back.Configs) != 3 || back.Configs[0].Plan != "decode" {
		t.Fatalf("json does not read back: %v", err)
	}
}

// TestDecodeDiffGateUndecided: the gate of run reports holds for decode
// results. The host's wait a token has one value a side, where the U test
// cannot reach alpha (smallest p 1), and one value measures no spread:
// 1.5x of it past a +10 % limit is undecided; an unchanged wait passes.
func TestDecodeDiffGateUndecided(t *testing.T) {
	base, head := decodeSide(false, decodeBaseSpeeds), decodeSide(true, decodeBaseSpeeds)
	head[0].HostWaitNsPerToken *= 1.5 // per-token-copy
	d := compareDecode(t, base, head, DiffOptions{})
	b := d.Breaches([]Threshold{{Metric: "host_wait_ns_per_token", Increase: true, Limit: 10, Percent: true}})
	if len(b) != 1 || !b[0].Undecided || !strings.HasPrefix(b[0].Config, "decode per-token-copy ") ||
		!strings.Contains(b[0].String(), "40,000 -> 60,000 (medians +50.00%), limit host_wait_ns_per_token:+10%: n=1+1, too few repetitions to measure the noise") {
		t.Errorf("breaches %q; want per-token-copy's, undecided", b)
	}
}

// TestHistoryDecodeAsDiff: probe history judges a change between two
// decode results as probe diff does: a tiny-block move of host
// allocations is not a change, a ledger peak is compared exactly.
func TestHistoryDecodeAsDiff(t *testing.T) {
	a := decodeRec("per-token-view", speeds(13750, 0))
	b := decodeRec("per-token-view", speeds(13750, 3))
	b.HostAllocsPerToken = 1.511
	b.DevicePeakBytes *= 2
	b.StartTime = "2026-11-26T03:00:00Z"
	es := []HistoryEntry{{Name: "a.json", Decode: []schema.DecodeRecord{a}}, {Name: "b.json", Decode: []schema.DecodeRecord{b}}}
	for _, c := range []struct{ metric, want string }{
		{"host_allocs_per_token", ",1.511,~\n"},
		{"device_peak_bytes", ",1622216,↑\n"},
	} {
		var buf bytes.Buffer
		if err := WriteHistory(&buf, es, c.metric, "", table.CSV); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), c.want) {
			t.Errorf("%s: no %q in\n%s", c.metric, c.want, buf.String())
		}
	}
}
