// Command benchtable prints one table row per `probe train` result JSON:
// threads, tokens/s, achieved GFLOPS, peak RSS, the analytical floor, their
// ratio and heap allocations per step. scripts/bench-trainer.sh runs it;
// jq is not assumed.
//
//	go run ./scripts/benchtable [-label NAME] RESULT.json...
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
)

// result holds the fields of probe/job.Result the table shows.
type result struct {
	Threads        int     `json:"threads"`
	Executors      int     `json:"executors"`
	Steps          int     `json:"steps"`
	TokensPerSec   float64 `json:"tokens_per_sec"`
	AchievedGFLOPS float64 `json:"achieved_gflops"`
	PeakRSSBytes   uint64  `json:"peak_rss_bytes"`
	FloorBytes     int64   `json:"floor_bytes"`
	AllocsPerStep  float64 `json:"go_heap_allocs_per_step"`
	LossLast       float32 `json:"loss_last"`
}

func main() {
	label := flag.String("label", "", "a first column naming the binary (empty: none)")
	flag.Parse()
	if err := run(os.Stdout, *label, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, label string, paths []string) error {
	if len(paths) == 0 {
		return fmt.Errorf("no result files (usage: benchtable [-label NAME] RESULT.json...)")
	}
	const mib = 1 << 20
	if label != "" {
		fmt.Fprintf(w, "%-10s ", "binary")
	}
	fmt.Fprintf(w, "%7s %5s %10s %7s %13s %9s %9s %11s %9s\n",
		"threads", "execs", "tokens/s", "GFLOPS", "peak_RSS_MiB", "floor_MiB", "RSS/floor", "allocs/step", "loss_last")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var r result
		if err := json.Unmarshal(b, &r); err != nil {
			return fmt.Errorf("reading %s: %v", p, err)
		}
		if label != "" {
			fmt.Fprintf(w, "%-10s ", label)
		}
		fmt.Fprintf(w, "%7d %5d %10.0f %7.1f %13.1f %9.1f %9.2f %11.1f %9.4f\n",
			r.Threads, r.Executors, r.TokensPerSec, r.AchievedGFLOPS, float64(r.PeakRSSBytes)/mib,
			float64(r.FloorBytes)/mib, float64(r.PeakRSSBytes)/float64(r.FloorBytes), r.AllocsPerStep, r.LossLast)
	}
	return nil
}
