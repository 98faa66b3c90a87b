package report

import (
	"bytes"
	"strings"
	"testing"

	"memprobe/internal/golden"
	"memprobe/internal/table"
	"memprobe/schema"
)

// fakeDecodeRecords are the seed preset's shape with made-up speeds and
// timings: every other figure is what the cpu device counts for that shape
// (bytes per pass over B=32 sequences of T=128: hidden rows and targets
// up; tokens, losses and, with probs, probabilities down).
func fakeDecodeRecords(probs bool) []schema.DecodeRecord {
	const B, T, C, V, outStride = 32, 128, 256, 788, 2
	base := schema.DecodeRecord{Schema: schema.DecodeVersion, Device: "cpu",
		H2DBytes: 4 * B * T * (C + 1), D2HBytes: 4 * B * T * outStride,
		Config: schema.DecodeConfig{Model: schema.Model{Vocab: V, Dim: C, Context: T, Batch: B}, Device: "cpu", Passes: 5, Probs: probs}}
	if probs {
		base.D2HBytes += 4 * B * T * V
	}
	rows := []struct {
		mode                    string
		tps, syncs, allocs      float64
		waitNs, busyNs, busyPct float64
		peak                    int64
	}{
		{"per-token-copy", 12500, 1, 4.003, 41250, 20100, 25.125, 4 * (V*C + C + V + 1 + outStride)},
		{"per-token-view", 13750.4, 1, 2, 40020, 20050, 27.569, 4 * (V*C + C + V + 1 + outStride)},
		{"per-token-prealloc", 15000.6, 1, 0, 39080, 20000, 30.001, 4 * (V*C + C + V + 1 + outStride)},
		{"batch", 75000, 1.0 / T, 0, 11900, 12300, 92.25, 4 * (V*C + T*(C+V+1+outStride))},
	}
	var recs []schema.DecodeRecord
	for _, r := range rows {
		rec := base
		rec.Decode, rec.TokensPerSec, rec.SyncsPerToken, rec.LaunchesPerToken, rec.HostAllocsPerToken = r.mode, r.tps, r.syncs, 2*r.syncs, r.allocs
		rec.HostWaitNsPerToken, rec.DeviceBusyNsPerToken, rec.DeviceBusyPct = r.waitNs, &r.busyNs, &r.busyPct
		rec.DevicePeakBytes, rec.LedgerPeakBytes, rec.DevicePeakSource = r.peak, r.peak, "ledger"
		recs = append(recs, rec)
	}
	return recs
}

// untimed clears the busy figures, as a device that cannot time its work
// leaves them.
func untimed(recs []schema.DecodeRecord) []schema.DecodeRecord {
	for i := range recs {
		recs[i].DeviceBusyNsPerToken, recs[i].DeviceBusyPct = nil, nil
	}
	return recs
}

// TestDecodeTablesGolden: the modes' table in each format, golden files
// named after the records that produce them; an untimed device's busy
// share is blank, not 0.
func TestDecodeTablesGolden(t *testing.T) {
	for _, c := range []struct {
		name   string
		recs   []schema.DecodeRecord
		format table.Format
	}{
		{"decode-all-probs.golden", fakeDecodeRecords(true), table.Text},
		{"decode-all-probs.markdown.golden", fakeDecodeRecords(true), table.Markdown},
		{"decode-all-probs.csv.golden", fakeDecodeRecords(true), table.CSV},
		{"decode-batch-noprobs.golden", untimed(fakeDecodeRecords(false)[3:]), table.Text},
	} {
		var buf bytes.Buffer
		if err := WriteDecode(&buf, c.recs, c.format); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, c.name, buf.Bytes())
	}
	if err := WriteDecode(new(bytes.Buffer), nil, table.Text); err == nil {
		t.Error("no records: no error")
	}
}

// TestDecodeChecksAndProvenance: a record with a check adds the check's
// table with the tolerances it was judged by, a failed one says FAIL; the
// provenance line names the machine, the commit and the GPU.
func TestDecodeChecksAndProvenance(t *testing.T) {
	recs := fakeDecodeRecords(true)[2:]
	recs[0].Check = &schema.DecodeCheck{Against: "cpu", Sequences: 4, MaxProbDiff: 1e-7, Pass: true, ProbTol: 2e-5, LossTol: 1e-4, TieTol: 1e-5}
	recs[1].Check = &schema.DecodeCheck{Against: "cpu", Sequences: 4, MaxProbDiff: 3e-3, TokensDiffer: 2, ProbTol: 2e-5, LossTol: 1e-4, TieTol: 1e-5}
	var buf bytes.Buffer
	if err := WriteDecode(&buf, recs, table.Text); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"check of cpu against the cpu device: 4 sequences of T=128, tolerances |Δp| <= 2e-05", "pass", "FAIL"} {
		if !strings.Contains(out, want) {
			t.Errorf("tables lack %q:\n%s", want, out)
		}
	}
	recs[0].StartTime = "2026-11-26T08:00:00Z"
	recs[0].Environment = schema.Environment{CPUModel: "AMD EPYC 9R14", LogicalCores: 2, GoVersion: "go1.26.8", VCSRevision: "0123456789abcdef"}
	recs[1].DeviceMemory = &schema.DeviceMemory{GPU: "NVIDIA H100 80GB HBM3"}
	want := "Measured by probe decode from 2026-11-26T08:00:00Z on AMD EPYC 9R14 (2 logical cores), go1.26.8, commit 0123456789ab, GPU NVIDIA H100 80GB HBM3"
	if got := DecodeProvenance(recs); got != want {
		t.Errorf("provenance:\n got %s\nwant %s", got, want)
	}
}

// TestBlocksDecode: Blocks of decode rows is the provenance line, then the tables
// WriteDecode prints, in its order: rendered one after another in each
// format they are WriteDecode's output byte for byte, the device memory's
// and the check's tables included when a record has them.
func TestBlocksDecode(t *testing.T) {
	recs := fakeDecodeRecords(true)
	recs[0].StartTime = "2026-11-26T08:00:00Z"
	recs[1].Check = &schema.DecodeCheck{Against: "cpu", Sequences: 4, MaxProbDiff: 1e-7, Pass: true, ProbTol: 2e-5, LossTol: 1e-4, TieTol: 1e-5}
	recs[2].DeviceMemory = &schema.DeviceMemory{GPU: "NVIDIA H100 80GB HBM3", TotalBytes: 80 << 30, ProcessSource: "nvml",
		ProcessPeakBytes: 600 << 20, ProcessBytes: 590 << 20, ContextBytes: 500 << 20, LedgerBytes: 1 << 20, UnexplainedBytes: 89 << 20}
	for _, c := range []struct {
		recs   []schema.DecodeRecord
		tables int
	}{{recs, 3}, {fakeDecodeRecords(false), 1}, {untimed(fakeDecodeRecords(false)[3:]), 1}} {
		bs, err := Blocks(DecodeRows(c.recs))
		if err != nil {
			t.Fatal(err)
		}
		if len(bs) != 1+c.tables || bs[0].Table != nil || bs[0].Paragraph != DecodeProvenance(c.recs) {
			t.Fatalf("%d blocks, the first %+v; want the provenance line and %d tables", len(bs), bs[0], c.tables)
		}
		for _, f := range table.Formats() {
			var want, got bytes.Buffer
			if err := WriteDecode(&want, c.recs, f); err != nil {
				t.Fatal(err)
			}
			for _, b := range bs[1:] {
				if b.Table == nil {
					t.Fatalf("a paragraph %q among the tables", b.Paragraph)
				}
			}
			// WriteDecode folds the tables to fit a terminal (text only).
			for i, b := range fitBlocks(bs[1:], f, TextWidth) {
				if i > 0 {
					got.WriteString("\n") // tables are apart by an empty line
				}
				if err := b.Table.Render(&got, f); err != nil {
					t.Fatal(err)
				}
			}
			if got.String() != want.String() {
				t.Errorf("%s: the blocks' tables:\n%s\nWriteDecode:\n%s", f, got.String(), want.String())
			}
		}
	}
	if _, err := Blocks(DecodeRows(nil)); err == nil {
		t.Error("no records: no error")
	}
}

// h100Records are the records of `probe decode --device cuda --decode all
// --preset gpt2-head --check cpu` on an H100 (driver 580, CUDA 13; see
// testdata/gpu), as that run wrote them.
func h100Records(t *testing.T) []schema.DecodeRecord {
	t.Helper()
	recs, err := schema.ReadDecode("../testdata/gpu/h100-2026-11-26/decode-gpt2-head.json")
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// TestDecodeTablesH100: a real GPU's records render: the modes, the device
// memory reconciliation and the check. The records predate the context
// measured on its own and the ledger rounded to the driver's pages: those
// parts and the remainder say "not measured" (their unexplained -5.56 MiB
// was the gap between two free figures, not a remainder). The same
// figures as a later run records them (NVML's charge for the context,
// 5.56 MiB less than its fall in free memory, measured on the same H100;
// the ledger in 2 MiB pages) fill those columns, nothing unexplained, and
// the uncharged memory is a column beside the sum.
func TestDecodeTablesH100(t *testing.T) {
	recs := h100Records(t)
	var buf bytes.Buffer
	if err := WriteDecode(&buf, recs, table.Markdown); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "decode-h100-gpt2-head.markdown.golden", buf.Bytes())

	const uncharged = 5832704 // testdata/gpu/h100-2026-11-26-bench
	for i := range recs {
		dm := *recs[i].DeviceMemory
		dm.ContextProcessBytes, dm.ContextProcessMeasured = dm.ContextBytes-uncharged, true
		dm.AllocGranularityBytes = 2 << 20
		dm.AllocRoundingBytes = (dm.LedgerBytes+2<<20-1)/(2<<20)*(2<<20) - dm.LedgerBytes
		dm.UnchargedBytes, dm.FreeGapMeasured, dm.FreeGapBytes = uncharged, true, 0
		dm.UnexplainedBytes, dm.UnexplainedMeasured = 0, true
		recs[i].DeviceMemory = &dm
	}
	buf.Reset()
	if err := WriteDecode(&buf, recs, table.Text); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "decode-h100-uncharged.golden", buf.Bytes())
}
