package job

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"memprobe/instrument/memmodel"
	"memprobe/ledger"
	"memprobe/schema"
	"memprobe/trainer/data"
	"memprobe/trainer/model"
)

// Prediction is what a configuration is expected to cost before it runs:
// the analytical model's figure with a margin, which `probe train` checks
// before it builds anything and `probe run` before it starts a child.
type Prediction struct {
	// PeakRSSBytes is ModelBytes plus the margin: the figure the memory
	// limit is checked against and schema.Run.PredictedPeakRSSBytes.
	PeakRSSBytes int64
	// ModelBytes is memmodel.Expected's total with the worker stacks
	// counted as resident pages (ResidentStackBytes per thread), not as
	// their reservation.
	ModelBytes int64
	// TapeBytes is the tape engine's graphs (0 for the static engine),
	// with the heap allocator's garbage until the next GC:
	// memmodel leaves them out, as they depend on what the run does, so
	// they are an empirical estimate here (tapeBytes), in ModelBytes.
	TapeBytes int64
	// Partial is true when TapeBytes is in the prediction: the figure is
	// an estimate to ±20 %, not the model's exact sum.
	Partial bool
	// Seconds is a rough estimate of one repetition's wall time on a
	// 2-core machine (EstimateSeconds).
	Seconds float64
}

// The margin over the model: what a process holds beyond the trainer's
// ledger. Measured with `probe train` on the tiny preset (a 1.6 MB
// model): 27 to 35 MiB of peak RSS, the Go runtime, the binary's text,
// OpenBLAS's buffers, the instruments and the JSON result; on the seed
// preset the fixed trainer sits 21 MiB above its ledger, the threads plan's
// before state 39 MiB. MarginBytes plus MarginFraction of the model covers
// all of them.
const (
	MarginBytes    = 48 << 20
	MarginFraction = 0.02
	// ResidentStackBytes is what a worker pthread's stack holds resident:
	// a few pages of stack and its static TLS (OpenBLAS alone has 60 KiB),
	// not the reservation (docs/phases.md: 63 threads of pthread workers
	// cost about 6 MiB).
	ResidentStackBytes = 128 << 10
)

// Predict is the prediction of configuration c. fileSize gives the size
// of a --data file (os.Stat's when nil).
func Predict(c schema.Config, fileSize func(string) (int64, error)) (Prediction, error) {
	if fileSize == nil {
		fileSize = statSize
	}
	tokens, err := DatasetTokens(c.Data, fileSize)
	if err != nil {
		return Prediction{}, err
	}
	comps := memmodel.Expected(memmodel.Input{Config: c, GOMAXPROCS: runtime.GOMAXPROCS(0), DatasetTokens: int(tokens)})
	var model int64
	for _, comp := range comps {
		if comp.Name == ledger.WorkerStacks {
			model += int64(c.Threads) * ResidentStackBytes
			continue
		}
		model += comp.PeakBytes
	}
	p := Prediction{TapeBytes: tapeBytes(c), Partial: c.Engine == "tape", Seconds: EstimateSeconds(c, tokens, model)}
	if p.TapeBytes > 0 && c.Tape.Allocator == "heap" && !c.Tape.KeepGraphs {
		// Released graphs are garbage until the next GC, which GOGC=100
		// starts when the heap has doubled: measured 298 MiB at seed
		// against 118 MiB of buffers and 70 MiB of graphs.
		p.TapeBytes += model
	}
	model += p.TapeBytes
	p.ModelBytes = model
	p.PeakRSSBytes = model + MarginBytes + int64(MarginFraction*float64(model))
	return p, nil
}

func statSize(p string) (int64, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// PredictedExecutors is c's executor count on this process's GOMAXPROCS:
// the model's (memmodel.Executors), computed from the configuration, not
// asked of the trainer.
func PredictedExecutors(c schema.Config) int {
	n, _ := memmodel.Executors(memmodel.Input{Config: c, GOMAXPROCS: runtime.GOMAXPROCS(0)})
	return n
}

// DatasetTokens is the token count of a data spec: SIZE/5 for
// synthetic:SIZE; a text file's byte count for a file (an upper bound: a
// character is at least one byte).
func DatasetTokens(spec string, fileSize func(string) (int64, error)) (int64, error) {
	if size, ok := strings.CutPrefix(spec, "synthetic:"); ok {
		n, err := data.ParseSize(size)
		if err != nil {
			return 0, fmt.Errorf("--data %s: %w", spec, err)
		}
		return n / data.BytesPerToken, nil
	}
	n, err := fileSize(spec)
	if err != nil {
		return 0, fmt.Errorf("--data %s: %w", spec, err)
	}
	return n, nil
}

// graphBytesPerActs is what one sequence's tape graph holds, over the
// static engine's activations of a sequence (model.Config.ActsSize × 4
// B): measured 1.8 at seed and 2.1 at tiny (the embedding plan's kept
// graphs, the arena plan's chunks).
const graphBytesPerActs = 2.0

// tapeBytes estimates the tape engine's graphs held at once: with
// KeepGraphs every sequence's of every step (B × steps) and the running
// ones; on the arena, a whole step's (B: the arena is rewound only at the
// end of the step); on the heap, one per executor.
func tapeBytes(c schema.Config) int64 {
	if c.Engine != "tape" {
		return 0
	}
	graphs := PredictedExecutors(c)
	switch {
	case c.Tape.KeepGraphs:
		graphs += c.Model.Batch * c.Steps
	case c.Tape.Allocator == "" || c.Tape.Allocator == "arena":
		graphs = c.Model.Batch
	}
	acts := 4 * int64(model.Config(c.Model).ActsSize())
	return int64(graphBytesPerActs * float64(acts) * float64(graphs))
}

// EstimateSeconds is a rough wall time of one child: start-up, the
// synthetic corpus, writing the buffers the model sizes once (bufferBytes:
// the model's bytes without the tape's graphs, which the steps write), and
// the steps at a throughput measured on the reference 2-core machine under
// load (AMD EPYC, `probe run --threads 63`: the avx2 GEMM about 80
// GFLOPS, the naive one 2, the tape engine 1.5x slower than the static
// one, the model lock 1.2x). It feeds the progress line's "left" and
// --dry-run; it is not a measurement.
func EstimateSeconds(c schema.Config, tokens, bufferBytes int64) float64 {
	const (
		startSeconds   = 0.3
		tokensPerSec   = 20e6  // synthetic corpus generation
		bytesPerSecond = 1.5e9 // first write of every buffer
	)
	gflops := 80.0
	if c.GEMM == "naive" {
		gflops = 2
	}
	if c.Engine == "tape" {
		gflops /= 1.5
	}
	step := FLOPsPerStep(model.Config(c.Model)) / (gflops * 1e9)
	if c.Pathology.ModelLock {
		step *= 1.2 // one core does the GEMMs
	}
	return startSeconds + float64(tokens)/tokensPerSec + float64(bufferBytes)/bytesPerSecond + float64(c.Steps)*step
}

// MemAvailable is /proc/meminfo's MemAvailable in bytes.
func MemAvailable() (int64, error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, fmt.Errorf("reading memory available: %w", err)
	}
	return ParseMemAvailable(b)
}

// ParseMemAvailable reads the MemAvailable line of /proc/meminfo's text.
func ParseMemAvailable(b []byte) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) >= 2 && string(f[0]) == "MemAvailable:" {
			kb, err := strconv.ParseInt(string(f[1]), 10, 64)
			if err != nil || kb < 0 || kb > 1<<53 {
				return 0, fmt.Errorf("/proc/meminfo: MemAvailable %q is not a size in kB", f[1])
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("/proc/meminfo: no MemAvailable line")
}

// DefaultMemLimit is MemAvailable less a 10 % margin: the default of
// probe run's --mem-limit.
func DefaultMemLimit() (int64, error) {
	a, err := MemAvailable()
	if err != nil {
		return 0, err
	}
	return a - a/10, nil
}
