package report

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"memprobe/internal/table"
	"memprobe/schema"
)

// WriteDecode prints decode records (`probe decode --json`, one per mode,
// slowest first) in format f: the modes side by side, then, where the
// records have them, the device memory reconciliation (cuda) and the check
// against the cpu device. `probe decode` prints its measurements through
// it and `probe report` a decode result file, so both show the same
// tables; Blocks hands the same tables to a page. Every table is
// rendered before anything is written (writeBlocks), so that an error
// leaves w untouched.
func WriteDecode(w io.Writer, recs []schema.DecodeRecord, f table.Format) error {
	tables, err := decodeTables(recs)
	if err != nil {
		return err
	}
	bs := make([]Block, len(tables))
	for i, t := range tables {
		bs[i] = Block{Table: t}
	}
	return writeBlocks(w, fitBlocks(bs, f, TextWidth), f) // an empty line between tables, as the run tables have
}

// decodeBlocks are decode records' blocks (Blocks).
func decodeBlocks(recs []schema.DecodeRecord) ([]Block, error) {
	tables, err := decodeTables(recs)
	if err != nil {
		return nil, err
	}
	bs := []Block{{Paragraph: DecodeProvenance(recs)}}
	for _, t := range tables {
		bs = append(bs, Block{Table: t})
	}
	return bs, nil
}

// decodeTables are WriteDecode's tables: the modes', then the device
// memory's and the checks' where a record has one. They do not depend on
// the format (no footnotes, nothing CSV writes apart).
func decodeTables(recs []schema.DecodeRecord) ([]*table.Table, error) {
	modes, err := decodeModesTable(recs)
	if err != nil {
		return nil, err
	}
	out := []*table.Table{modes}
	for _, t := range []*table.Table{decodeDeviceMemoryTable(recs), decodeChecksTable(recs)} {
		if t != nil {
			out = append(out, t)
		}
	}
	return out, nil
}

// DecodeProvenance is the line that says where decode records come from:
// when the run began, on which machine and build, and on which GPU.
func DecodeProvenance(recs []schema.DecodeRecord) string {
	if len(recs) == 0 {
		return ""
	}
	r0 := recs[0]
	s := "Measured by probe decode from " + r0.StartTime + machine(r0.Environment)
	for _, r := range recs {
		if r.DeviceMemory != nil && r.DeviceMemory.GPU != "" {
			return s + ", GPU " + r.DeviceMemory.GPU
		}
	}
	return s
}

// decodeModesTable has one row per record, the first row's mode being
// the baseline of the speedup column. Every figure but tokens/s, the
// speedup, the host's wait and the device's busy share is deterministic
// for a given shape.
func decodeModesTable(recs []schema.DecodeRecord) (*table.Table, error) {
	if len(recs) == 0 {
		return nil, errors.New("decode table: no measurements")
	}
	r0 := recs[0]
	m0 := r0.Config.Model
	back := "tokens, losses and probabilities copied back"
	if !r0.Config.Probs {
		back = "tokens and losses copied back"
	}
	passes := fmt.Sprintf("timed passes %d", r0.Config.Passes)
	pooled := slices.ContainsFunc(recs, func(r schema.DecodeRecord) bool { return r.Runs > 1 })
	if pooled {
		// Runs may differ between modes (a pool of files that measured
		// different modes): say so rather than name one count.
		runs := r0.Runs
		for _, r := range recs {
			if r.Runs != runs {
				runs = 0
			}
		}
		if runs > 1 {
			passes = fmt.Sprintf("%d runs of %d timed passes, each its own process: medians of the runs", runs, r0.Config.Passes)
		} else {
			passes = fmt.Sprintf("timed passes %d; pooled runs: medians of the runs", r0.Config.Passes)
		}
	}
	cols := []table.Column{
		{Name: "mode"},
		labelled("tokens_per_sec", table.Column{Kind: table.Rate}),
	}
	if pooled {
		cols = append(cols, table.Column{Name: "runs", Kind: table.Int},
			table.Column{Name: "slowest run", Kind: table.Rate}, table.Column{Name: "fastest run", Kind: table.Rate})
	}
	// Page-locked host buffers are a per-mode fact (the prealloc and batch
	// modes on cuda take them, the others keep Go slices by design): the
	// title names the modes that had them, where any did.
	var pinned []string
	for _, r := range recs {
		if r.Config.PinnedHost {
			pinned = append(pinned, r.Decode)
		}
	}
	if len(pinned) > 0 {
		back += " (into page-locked host memory in " + strings.Join(pinned, ", ") + ")"
	}
	t := table.New(fmt.Sprintf("decode on %s: B=%d sequences x T=%d positions, C=%d, V=%d; %s; %s",
		r0.Device, m0.Batch, m0.Context, m0.Dim, m0.Vocab, passes, back),
		append(cols,
			table.Column{Name: "vs " + r0.Decode, Kind: table.Float, Decimals: 1, Unit: "×"},
			labelled("syncs_per_token", table.Column{Kind: table.Rate, Decimals: 4}),
			labelled("launches_per_token", table.Column{Kind: table.Rate, Decimals: 4}),
			labelled("host_wait_ns_per_token", table.Column{Kind: table.Rate, Decimals: 1, Unit: "µs"}),
			labelled("device_busy_pct", table.Column{Kind: table.Percent, Decimals: 1}),
			labelled("host_allocs_per_token", table.Column{Kind: table.Rate, Decimals: 3}),
			table.Column{Name: "h2d per pass", Kind: table.Bytes},
			table.Column{Name: "d2h per pass", Kind: table.Bytes},
			labelled("device_peak_bytes", table.Column{Kind: table.Bytes}),
		)...,
	)
	for _, r := range recs {
		var speedup any
		if r0.TokensPerSec > 0 {
			speedup = r.TokensPerSec / r0.TokensPerSec
		}
		row := []any{r.Decode, r.TokensPerSec}
		if pooled {
			runs := r.TokensPerSecRuns
			if len(runs) == 0 {
				runs = []float64{r.TokensPerSec}
			}
			row = append(row, len(runs), slices.Min(runs), slices.Max(runs))
		}
		t.Add(append(row, speedup, r.SyncsPerToken, r.LaunchesPerToken,
			r.HostWaitNsPerToken/1e3, r.DeviceBusyPct, r.HostAllocsPerToken, r.H2DBytes, r.D2HBytes, r.DevicePeakBytes)...)
	}
	return t, nil
}

// decodeDeviceMemoryTable reconciles each record's device memory (cuda
// only); nil when no record has a reconciliation. NVML's figure at the
// end is the sum of the parts from "context+module" to "unexplained";
// the uncharged memory, a column only where some record measured it, is
// beside the sum. A part a record did not measure says "not measured":
// records from before the context was measured on its own and the ledger
// rounded to the driver's pages have no such parts, and their remainder
// was not one.
func decodeDeviceMemoryTable(recs []schema.DecodeRecord) *table.Table {
	rows := slices.DeleteFunc(slices.Clone(recs), func(r schema.DecodeRecord) bool { return r.DeviceMemory == nil })
	if len(rows) == 0 {
		return nil
	}
	dm0 := rows[0].DeviceMemory
	title := fmt.Sprintf("device memory on %s (%s): NVML's figure for this process at the end = context+module (NVML's, before any device) + held before + stream+cuBLAS handle + ledger + rounding to the driver's pages + cuBLAS workspace + unexplained",
		dm0.GPU, table.FormatBytesShort(dm0.TotalBytes))
	if dm0.NVMLNote != "" {
		title += "; NVML: " + dm0.NVMLNote
	}
	uncharged := slices.ContainsFunc(rows, func(r schema.DecodeRecord) bool { return r.DeviceMemory.FreeGapMeasured })
	cols := []table.Column{
		{Name: "mode"},
		{Name: "NVML peak", Kind: table.Bytes},
		{Name: "NVML at end", Kind: table.Bytes},
		{Name: "context+module", Kind: table.Bytes},
		{Name: "held before", Kind: table.Bytes},
		{Name: "stream+cuBLAS handle", Kind: table.Bytes},
		{Name: "ledger", Kind: table.Bytes},
		{Name: "rounding to pages", Kind: table.Bytes},
		{Name: "cuBLAS workspace", Kind: table.Bytes},
		{Name: "unexplained", Kind: table.Bytes},
	}
	if uncharged {
		cols = append(cols, table.Column{Name: "uncharged (not in NVML's)", Kind: table.Bytes})
	}
	const notMeasured = "not measured"
	t := table.New(title, cols...)
	for _, r := range rows {
		d := r.DeviceMemory
		// Without NVML there is no process figure and no context on its
		// own, so no remainder; without NVML's entry for the process, no
		// peak: blank, not 0.
		var peak, end any
		if d.ProcessSource == "nvml" {
			peak = d.ProcessPeakBytes
		}
		if d.ProcessSource != "" {
			end = d.ProcessBytes
		}
		var ctx, rounding, unexplained any = notMeasured, notMeasured, notMeasured
		if d.ContextProcessMeasured {
			ctx = d.ContextProcessBytes
		}
		if d.AllocGranularityBytes > 0 {
			rounding = d.AllocRoundingBytes
		}
		if d.UnexplainedMeasured {
			unexplained = d.UnexplainedBytes
		}
		cells := []any{r.Decode, peak, end, ctx, d.HeldBeforeOpenBytes, d.StreamHandleBytes, d.LedgerBytes,
			rounding, d.CuBLASWorkspaceBytes, unexplained}
		if uncharged {
			var u any
			if d.FreeGapMeasured && d.ProcessSource == "nvml" && d.ContextNote == "" && d.UnchargedNote == "" {
				u = d.UnchargedBytes
			}
			cells = append(cells, u)
		}
		t.Add(cells...)
	}
	return t
}

// decodeChecksTable has the check of each record that has one; nil when
// none has.
func decodeChecksTable(recs []schema.DecodeRecord) *table.Table {
	rows := slices.DeleteFunc(slices.Clone(recs), func(r schema.DecodeRecord) bool { return r.Check == nil })
	if len(rows) == 0 {
		return nil
	}
	c0 := rows[0].Check
	t := table.New(fmt.Sprintf("check of %s against the %s device: %d sequences of T=%d, tolerances |Δp| <= %g, |Δloss|/max(1,|loss|) <= %g, tokens equal but at near-ties (top-2 gap < %g)",
		rows[0].Device, c0.Against, c0.Sequences, rows[0].Config.Model.Context, c0.ProbTol, c0.LossTol, c0.TieTol),
		table.Column{Name: "mode"},
		table.Column{Name: "max |Δp|", Kind: table.Float, Decimals: 9},
		table.Column{Name: "max |Δloss| rel", Kind: table.Float, Decimals: 9},
		table.Column{Name: "tokens differ", Kind: table.Int},
		table.Column{Name: "at near-ties", Kind: table.Int},
		table.Column{Name: "verdict"},
	)
	for _, r := range rows {
		c := r.Check
		verdict := "pass"
		if !c.Pass {
			verdict = "FAIL"
		}
		t.Add(r.Decode, c.MaxProbDiff, c.MaxLossDiff, c.TokensDiffer, c.TokensNearTie, verdict)
	}
	return t
}
