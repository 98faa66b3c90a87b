// Command benchtable prints one table row per `probe train` result JSON:
// the GEMM backend used, threads, tokens/s, achieved GFLOPS, peak RSS, the analytical floor, their
// ratio and heap allocations per step. scripts/bench-trainer.sh runs it;
// jq is not assumed.
//
//	go run ./scripts/benchtable [-label NAME] [-format text|markdown|csv] RESULT.json...
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"memprobe/internal/table"
)

// result holds the fields of run/job.Result the table shows.
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
	GEMM           string  `json:"gemm"` // the backend used
}

func main() {
	label := flag.String("label", "", "a first column naming the binary (empty: none)")
	format := flag.String("format", "text", "output format: text, markdown or csv")
	flag.Parse()
	f, err := table.ParseFormat(*format)
	if err == nil {
		err = run(os.Stdout, *label, f, flag.Args())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, label string, f table.Format, paths []string) error {
	if len(paths) == 0 {
		return fmt.Errorf("no result files (usage: benchtable [-label NAME] [-format text|markdown|csv] RESULT.json...)")
	}
	cols := []table.Column{
		{Name: "gemm"},
		{Name: "threads", Kind: table.Int},
		{Name: "executors", Kind: table.Int},
		{Name: "tokens/s", Kind: table.Rate},
		{Name: "GFLOPS", Kind: table.Float, Decimals: 1},
		{Name: "peak RSS", Kind: table.Bytes},
		{Name: "floor", Kind: table.Bytes},
		{Name: "RSS/floor", Kind: table.Float, Decimals: 2},
		{Name: "allocs/step", Kind: table.Rate, Decimals: 1},
		{Name: "loss last", Kind: table.Float, Decimals: 4},
	}
	if label != "" {
		cols = append([]table.Column{{Name: "binary"}}, cols...)
	}
	t := table.New("", cols...)
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var r result
		if err := json.Unmarshal(b, &r); err != nil {
			return fmt.Errorf("reading %s: %v", p, err)
		}
		var ratio any
		if r.FloorBytes > 0 {
			ratio = float64(r.PeakRSSBytes) / float64(r.FloorBytes)
		}
		row := []any{r.GEMM, r.Threads, r.Executors, r.TokensPerSec, r.AchievedGFLOPS, r.PeakRSSBytes, r.FloorBytes, ratio, r.AllocsPerStep, r.LossLast}
		if label != "" {
			row = append([]any{label}, row...)
		}
		t.Add(row...)
	}
	return t.Render(w, f)
}
