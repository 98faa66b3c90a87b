// Package schematest makes the decode records the tests of report and
// run/runner share: every figure fixed, so that their verdicts are.
package schematest

import (
	"slices"

	"memprobe/schema"
)

// Record is a decode record of the seed preset's shape (B=32 T=128
// C=256 V=788, probabilities copied back) on the cpu device, with the
// counts the cpu device makes for mode and the given per-pass speeds:
// every figure fixed, so that the tests' verdicts are too.
func Record(mode string, passes []float64) schema.DecodeRecord {
	const B, T, C, V = 32, 128, 256, 788
	syncs, allocs := 1.0, 0.0
	switch mode {
	case "batch":
		syncs = 1.0 / T
	case "per-token-copy":
		allocs = 4
	case "per-token-view":
		allocs = 1.5
	}
	var sum float64
	for _, x := range passes {
		sum += 1 / x
	}
	busy, pct := 20000.0, 30.0
	return schema.DecodeRecord{
		Schema:       schema.DecodeVersion,
		TokensPerSec: float64(len(passes)) / sum, TokensPerSecPasses: slices.Clone(passes),
		SyncsPerToken: syncs, LaunchesPerToken: 2 * syncs, HostAllocsPerToken: allocs,
		HostWaitNsPerToken: 40000, DeviceBusyNsPerToken: &busy, DeviceBusyPct: &pct,
		H2DBytes: 4 * B * T * (C + 1), D2HBytes: 4 * B * T * (V + 4),
		DevicePeakBytes: 4 * (V*C + C + V + 5), DevicePeakSource: "ledger", LedgerPeakBytes: 4 * (V*C + C + V + 5),
		Decode: mode, Device: "cpu",
		Config: schema.DecodeConfig{Preset: "seed", Model: schema.Model{Vocab: V, Dim: C, Layers: 2, Heads: 4, FF: 1024, Context: T, Batch: B},
			Seed: 1, Data: "synthetic:64KB", DataSeed: 1, Device: "cpu", GEMM: "auto", GEMMUsed: "go", Passes: len(passes), Probs: true},
		Environment: schema.Environment{VCSRevision: "0123456789abcdef0123456789abcdef01234567", GoVersion: "go1.26.0", GOOS: "linux", GOARCH: "amd64"},
		StartTime:   "2026-11-26T02:00:00Z",
	}
}

// Speeds are ten passes around tps with a spread of ±2 %, in a fixed
// order that shift rotates.
func Speeds(tps float64, shift int) []float64 {
	rel := []float64{-0.02, 0.012, -0.004, 0.016, 0.000, -0.016, 0.008, -0.008, 0.02, 0.004}
	out := make([]float64, len(rel))
	for i := range rel {
		out[i] = tps * (1 + rel[(i+shift)%len(rel)])
	}
	return out
}
