package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// DecodeVersion is the format of `probe decode --json`.
const DecodeVersion = "memprobe.decode/v1"

// DecodeRecord is one decode mode's measurement as `probe decode --json`
// writes it (an array of them for --decode all), of DecodeVersion: the
// figures, then what produced them, so that a record read on its own says
// which configuration, build and machine it measured.
type DecodeRecord struct {
	Schema       string  `json:"schema"`
	TokensPerSec float64 `json:"tokens_per_sec"`
	// TokensPerSecPasses is the tokens/s of each timed pass, in order:
	// the samples behind TokensPerSec (all passes' tokens over their
	// time), which probe diff compares; HostWaitNsPerTokenPasses and
	// DeviceBusyPctPasses the same for the host's wait and the device's
	// busy share (absent where the device is untimed).
	TokensPerSecPasses       []float64 `json:"tokens_per_sec_passes"`
	HostWaitNsPerTokenPasses []float64 `json:"host_wait_ns_per_token_passes"`
	DeviceBusyPctPasses      []float64 `json:"device_busy_pct_passes,omitempty"`
	// Runs is the number of processes whose measurements of this mode the
	// record pools (probe decode --runs N, probe merge of decode results),
	// absent for one. A pooled record's measured figures are the medians of
	// its runs' figures, which TokensPerSecRuns, HostWaitNsPerTokenRuns,
	// DeviceBusyNsPerTokenRuns and DeviceBusyPctRuns hold in run order;
	// its _passes arrays hold every run's passes, run after run. The runs
	// are independent samples (each its own process, heap and moment on
	// the machine), which probe diff compares in preference to the passes.
	Runs                     int       `json:"runs,omitempty"`
	TokensPerSecRuns         []float64 `json:"tokens_per_sec_runs,omitempty"`
	HostWaitNsPerTokenRuns   []float64 `json:"host_wait_ns_per_token_runs,omitempty"`
	DeviceBusyNsPerTokenRuns []float64 `json:"device_busy_ns_per_token_runs,omitempty"`
	DeviceBusyPctRuns        []float64 `json:"device_busy_pct_runs,omitempty"`
	SyncsPerToken            float64   `json:"syncs_per_token"`
	LaunchesPerToken         float64   `json:"launches_per_token"`
	HostAllocsPerToken       float64   `json:"host_allocs_per_token"`
	// HostWaitNsPerToken is the wall time per token the host spent blocked
	// in the device's waits; DeviceBusyNsPerToken the device's time at
	// work per token (cpu: its stream thread running commands; cuda: the
	// span CUDA events measure from the first command after a wait to the
	// wait) and DeviceBusyPct that share of the wall time. Both busy
	// figures are absent where the device could not time its work.
	HostWaitNsPerToken   float64  `json:"host_wait_ns_per_token"`
	DeviceBusyNsPerToken *float64 `json:"device_busy_ns_per_token,omitempty"`
	DeviceBusyPct        *float64 `json:"device_busy_pct,omitempty"`
	H2DBytes             int64    `json:"h2d_bytes"` // per pass over the B sequences
	D2HBytes             int64    `json:"d2h_bytes"` // per pass over the B sequences
	// DevicePeakBytes is the device memory's peak: on cuda, the process's
	// as NVML saw it over the mode's run (context and library workspaces
	// included), falling back to the ledger's where NVML is not available;
	// on cpu, the ledger's (its buffers are the device's memory).
	DevicePeakBytes int64 `json:"device_peak_bytes"`
	// DevicePeakSource says which: "nvml" or "ledger".
	DevicePeakSource string `json:"device_peak_source,omitempty"`
	// LedgerPeakBytes is the peak of the bytes allocated through the
	// device's allocator (the device ledger), whatever the device.
	LedgerPeakBytes int64 `json:"ledger_peak_bytes"`
	// Buffers is the device ledger at its fullest: bytes by buffer name.
	Buffers []DeviceBuffer `json:"buffers,omitempty"`
	// DeviceMemory reconciles the process's device memory (cuda only).
	DeviceMemory *DeviceMemory `json:"device_memory,omitempty"`
	// Check is the comparison with the cpu device (probe decode --check cpu).
	Check  *DecodeCheck `json:"check,omitempty"`
	Decode string       `json:"decode"`
	Device string       `json:"device"`

	Config      DecodeConfig `json:"config"`
	Environment Environment  `json:"environment"`
	CommandLine []string     `json:"command_line"`
	StartTime   string       `json:"start_time"` // RFC 3339: when the run began
}

// DecodeConfig is the configuration a decode record measured: enough to
// run it again with `probe decode`.
type DecodeConfig struct {
	// Preset is the named shape (--preset), "" with a checkpoint; Model is
	// the shape decoded (vocab V, dim C, context T, batch B sequences per
	// pass), overrides and checkpoint applied.
	Preset     string `json:"preset"`
	Checkpoint string `json:"checkpoint"` // the parameters' checkpoint ("": fresh ones from seed)
	Model      Model  `json:"model"`
	Seed       uint64 `json:"seed"`      // parameter initialisation without a checkpoint
	Data       string `json:"data"`      // the sequences: "synthetic:SIZE" or a text file
	DataSeed   uint64 `json:"data_seed"` // seed of the synthetic corpus
	Device     string `json:"device"`
	// GEMM is the backend asked for, GEMMUsed the one that ran (the model
	// body's and the cpu device's).
	GEMM     string `json:"gemm"`
	GEMMUsed string `json:"gemm_used"`
	Passes   int    `json:"passes"` // timed passes, after one warm-up pass
	Probs    bool   `json:"probs"`  // probabilities copied back
	Check    string `json:"check"`  // reference device compared against ("": none)
	// PinnedHost is true only when the mode's host buffers were
	// page-locked memory the device allocated: the per-token-prealloc and
	// batch modes' own buffers and the one the probabilities come back
	// into, with probe decode --pinned-host (the default) on a device that
	// has such memory (cuda; never cpu), so that their copies went
	// straight by DMA instead of through the device's pinned staging and
	// a second host copy. Always false for per-token-copy and
	// per-token-view, which keep fresh Go slices by design, and with
	// --pinned-host=false (or absent, in records from before it existed):
	// Go slices, staged. Records that differ in it are different
	// configurations (DecodeRecord.Key).
	PinnedHost bool `json:"pinned_host"`
}

// ReadDecode reads the records of `probe decode --json` from path.
func ReadDecode(path string) ([]DecodeRecord, error) {
	b, err := ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading decode result: %w", err)
	}
	return DecodeDecode(b, path)
}

// DecodeDecode parses `probe decode --json`'s output, one record or an
// array of them, each of DecodeVersion; name is used in errors. It refuses
// another format or version (wrapping ErrSchema), JSON that does not fit
// ("line N: ..."), an empty array and a record no run can have produced.
func DecodeDecode(b []byte, name string) ([]DecodeRecord, error) {
	var raws []json.RawMessage
	if IsJSONArray(b) {
		if err := json.Unmarshal(b, &raws); err != nil {
			return nil, fmt.Errorf("reading decode result %s: %s", name, jsonError(b, err))
		}
		if len(raws) == 0 {
			return nil, fmt.Errorf("reading decode result %s: an empty array, no mode measured", name)
		}
	} else {
		raws = []json.RawMessage{b}
	}
	recs := make([]DecodeRecord, len(raws))
	for i, raw := range raws {
		where := name
		if len(raws) > 1 {
			where = fmt.Sprintf("%s, record %d", name, i)
		}
		if err := checkSchema(raw, "decode result", where, DecodeVersion); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(raw, &recs[i]); err != nil {
			return nil, fmt.Errorf("reading decode result %s: %s", where, jsonError(raw, err))
		}
		if err := recs[i].check(); err != nil {
			return nil, fmt.Errorf("reading decode result %s: %v", where, err)
		}
	}
	return recs, nil
}

// IsJSONArray reports whether b's first non-space byte opens an array.
func IsJSONArray(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return len(b) > 0 && b[0] == '['
}

// check says what makes r implausible, or nil.
// Key names a decode record for matching: its mode, device and shape
// (batch B, context T, dim C, vocab V), whether probabilities were copied
// back and whether the host buffers were page-locked (config.pinned_host),
// what must be equal for two records' figures to be comparable: "decode
// per-token-copy on cpu (B=32 T=128 C=256 V=788, probs)", "decode batch on
// cuda (B=8 T=128 C=768 V=50257, probs, pinned host)". Pinned host memory
// is named only where it was used, so the keys of records without it
// (every cpu record, and records from before the field) are as they were.
// probe diff matches records by it and the runner pools runs by it.
func (r *DecodeRecord) Key() string {
	m := r.Config.Model
	probs := "probs"
	if !r.Config.Probs {
		probs = "no probs"
	}
	pinned := ""
	if r.Config.PinnedHost {
		pinned = ", pinned host"
	}
	return fmt.Sprintf("decode %s on %s (B=%d T=%d C=%d V=%d, %s%s)", r.Decode, r.Device, m.Batch, m.Context, m.Dim, m.Vocab, probs, pinned)
}

func (r *DecodeRecord) check() error {
	m := r.Config.Model
	switch {
	case r.Decode == "" || r.Device == "":
		return fmt.Errorf("implausible decode record: mode %q on device %q", r.Decode, r.Device)
	case !(r.TokensPerSec > 0):
		return fmt.Errorf("implausible decode record: %v tokens/s", r.TokensPerSec)
	case m.Vocab < 1 || m.Dim < 1 || m.Context < 1 || m.Batch < 1 || r.Config.Passes < 1:
		return fmt.Errorf("implausible decode record: shape V=%d C=%d T=%d B=%d, %d passes (no configuration?)", m.Vocab, m.Dim, m.Context, m.Batch, r.Config.Passes)
	case r.Environment.GoVersion == "":
		return errors.New("implausible decode record: environment has no go_version (no environment?)")
	}
	for _, v := range r.TokensPerSecPasses {
		if !(v > 0) {
			return fmt.Errorf("implausible decode record: a pass at %v tokens/s", v)
		}
	}
	for _, p := range [][]float64{r.HostWaitNsPerTokenPasses, r.DeviceBusyPctPasses} {
		if len(p) != 0 && len(p) != len(r.TokensPerSecPasses) {
			return fmt.Errorf("implausible decode record: %d passes of tokens/s, %d of another figure", len(r.TokensPerSecPasses), len(p))
		}
	}
	switch {
	case r.Runs < 0 || r.Runs == 1:
		return fmt.Errorf("implausible decode record: runs %d (absent for one run, else at least 2)", r.Runs)
	case r.Runs == 0 && len(r.TokensPerSecRuns) > 0:
		return fmt.Errorf("implausible decode record: %d runs of tokens/s but no runs count", len(r.TokensPerSecRuns))
	case r.Runs > 0 && len(r.TokensPerSecRuns) != r.Runs:
		return fmt.Errorf("implausible decode record: %d runs, %d runs of tokens/s", r.Runs, len(r.TokensPerSecRuns))
	}
	for _, v := range r.TokensPerSecRuns {
		if !(v > 0) {
			return fmt.Errorf("implausible decode record: a run at %v tokens/s", v)
		}
	}
	for _, p := range [][]float64{r.HostWaitNsPerTokenRuns, r.DeviceBusyNsPerTokenRuns, r.DeviceBusyPctRuns} {
		if len(p) != 0 && len(p) != r.Runs {
			return fmt.Errorf("implausible decode record: %d runs, %d runs of another figure", r.Runs, len(p))
		}
	}
	if _, err := time.Parse(time.RFC3339, r.StartTime); err != nil {
		return fmt.Errorf("implausible decode record: start_time %q is not RFC 3339", r.StartTime)
	}
	return nil
}
