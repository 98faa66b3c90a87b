package decodebench

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"memprobe/internal/table"
	"memprobe/report"
	"memprobe/schema"
	"memprobe/trainer/decode"
	"memprobe/trainer/device"
	"memprobe/trainer/gemm"
	"memprobe/trainer/model"
)

// Small shapes: C channels, V vocabulary, maxRows the decoder's row bound
// (the T of a batch decode).
const tC, tV, tMaxRows = 24, 53, 8

// inputs are random (never all-zero) decode inputs.
type inputs struct {
	hidden  []float32 // (rows, C)
	lmHead  []float32 // (V, C)
	targets []uint16  // (rows)
}

// newInputs draws rows hidden states and targets and a (V, C) LM head from
// a generator seeded with seed, uniform in [-1, 1).
func newInputs(seed int64, rows, C, V int) inputs {
	r := rand.New(rand.NewSource(seed))
	in := inputs{hidden: make([]float32, rows*C), lmHead: make([]float32, V*C), targets: make([]uint16, rows)}
	for i := range in.hidden {
		in.hidden[i] = r.Float32()*2 - 1
	}
	for i := range in.lmHead {
		in.lmHead[i] = r.Float32()*2 - 1
	}
	for i := range in.targets {
		in.targets[i] = uint16(r.Intn(V))
	}
	return in
}

// openDecoder opens the cpu device with backend g and a decoder in mode m
// on it; closeBoth closes the decoder, then the device.
func openDecoder(t testing.TB, g gemm.Backend, m decode.Mode, lmHead []float32) (dev device.Device, d *decode.Decoder, closeBoth func()) {
	t.Helper()
	dev, err := device.Open("cpu", g, nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err = decode.New(dev, m, tV, tC, tMaxRows, lmHead)
	if err != nil {
		dev.Close()
		t.Fatal(err)
	}
	return dev, d, func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
		if err := dev.Close(); err != nil {
			t.Error(err)
		}
	}
}

// TestCounts checks syncs, launches and host allocations per token over many
// calls after a warm-up. Allocations are counted by site in every goroutine
// (the stream thread included), not testing.AllocsPerRun, and the Go
// runtime's own objects (sudogs) are apart. Per token, per-token-copy makes
// the hidden copy, the one-target slice, the output record and (with
// probs) the probability row: 4 (3); per-token-view the output record and
// the probability row: 2 (1). The prealloc and batch modes make none.
func TestCounts(t *testing.T) {
	const B, T, passes = 3, tMaxRows, 70
	in := newInputs(3, B*T, tC, tV) // hidden (B, T, C), targets (B, T)
	for _, m := range decode.Modes() {
		for _, withProbs := range []bool{true, false} {
			dev, d, closeBoth := openDecoder(t, gemm.Naive{}, m, in.lmHead)
			meas, err := MeasureBatch(dev, d, in.hidden, B, T, in.targets, withProbs, passes)
			closeBoth()
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s probs=%v: syncs/token %.3f launches/token %.3f allocs/token %.3f h2d B/pass %d d2h B/pass %d device peak %d B",
				m, withProbs, meas.SyncsPerToken, meas.LaunchesPerToken, meas.HostAllocsPerToken, meas.H2DBytes, meas.D2HBytes, meas.LedgerPeakBytes)
			tokens := meas.Config.Passes * meas.Config.Model.Batch * meas.Config.Model.Context
			if meas.Decode != m.String() || meas.Device != "cpu" || meas.Config.Model.Batch != B || meas.Config.Model.Context != T || tokens != passes*B*T {
				t.Errorf("%s: measurement labelled %s on %s, B=%d T=%d tokens %d; want %s on cpu, B=%d T=%d tokens %d",
					m, meas.Decode, meas.Device, meas.Config.Model.Batch, meas.Config.Model.Context, tokens, m, B, T, passes*B*T)
			}
			wantSyncs, wantLaunches := 1.0, 2.0
			if m == decode.Batch {
				wantSyncs, wantLaunches = 1.0/T, 2.0/T
			}
			if meas.SyncsPerToken != wantSyncs {
				t.Errorf("%s: %v syncs/token, want %v", m, meas.SyncsPerToken, wantSyncs)
			}
			if meas.LaunchesPerToken != wantLaunches {
				t.Errorf("%s: %v launches/token, want %v", m, meas.LaunchesPerToken, wantLaunches)
			}
			// Per pass: B×T hidden rows and targets up; tokens and losses (and
			// probabilities) down.
			wantH2D, wantD2H := int64(4*B*T*(tC+1)), int64(4*B*T*device.OutStride)
			if withProbs {
				wantD2H += 4 * B * T * tV
			}
			if meas.H2DBytes != wantH2D || meas.D2HBytes != wantD2H {
				t.Errorf("%s: %d bytes up, %d down per pass, want %d, %d", m, meas.H2DBytes, meas.D2HBytes, wantH2D, wantD2H)
			}
			switch m {
			case decode.PerTokenCopy, decode.PerTokenView:
				// Counted as the heap profile sees them: the hidden copy and
				// the probability row are whole objects; the target slice
				// and the output record are tiny (under 16 B, no pointers)
				// and share 16-byte blocks, which count once per block. So
				// more than the whole objects, by a positive fraction.
				whole := 0.0
				if m == decode.PerTokenCopy {
					whole++
				}
				if withProbs {
					whole++
				}
				if meas.HostAllocsPerToken <= whole {
					t.Errorf("%s: %v host allocations/token, want more than %v", m, meas.HostAllocsPerToken, whole)
				}
			default:
				if objs := meas.HostAllocsPerToken * float64(tokens); objs != 0 {
					t.Errorf("%s: %v host allocations over %d passes, want 0", m, objs, passes)
				}
			}
		}
	}
}

// TestMeasureBatchErrors: bad passes and inputs shorter than the shape are
// errors, before any decoding.
func TestMeasureBatchErrors(t *testing.T) {
	const T = 7
	in := newInputs(5, T, tC, tV)
	dev, d, closeBoth := openDecoder(t, gemm.Naive{}, decode.Batch, in.lmHead)
	defer closeBoth()
	for name, call := range map[string]func() error{
		"no passes":     func() error { _, err := MeasureBatch(dev, d, in.hidden, 1, T, nil, false, 0); return err },
		"short batch":   func() error { _, err := MeasureBatch(dev, d, in.hidden, 2, T, nil, false, 1); return err },
		"bad shape":     func() error { _, err := MeasureBatch(dev, d, in.hidden, 1, 0, nil, false, 1); return err },
		"short targets": func() error { _, err := MeasureBatch(dev, d, in.hidden, 1, T, in.targets[:3], false, 1); return err },
	} {
		err := call()
		if err == nil {
			t.Errorf("%s: no error", name)
		} else if !strings.HasPrefix(err.Error(), "measuring decode: ") {
			t.Errorf("%s: error %q, want it to start with \"measuring decode: \"", name, err)
		}
	}
}

// TestRun measures every mode on the micro preset: one measurement per
// mode in the order asked, the progress lines, and the table. Page-locked
// host memory is asked for, as probe decode does by default; the cpu
// device has none, so the records say it was not used.
func TestRun(t *testing.T) {
	cfg, err := model.Preset("micro")
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Config: cfg, Seed: 1337, Data: "synthetic:4KB", DataSeed: 1, GEMM: "naive",
		Modes: decode.Modes(), Device: "cpu", Passes: 1, Probs: true, PinnedHost: true}
	var progress bytes.Buffer
	ms, err := Run(o, &progress)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != len(o.Modes) {
		t.Fatalf("%d measurements, want %d", len(ms), len(o.Modes))
	}
	for i, m := range o.Modes {
		if shape := ms[i].Config.Model; ms[i].Decode != m.String() || shape != schema.Model(cfg) || ms[i].Config.GEMMUsed == "" {
			t.Errorf("measurement %d: %s model %+v gemm %q, want %s model %+v and the gemm used",
				i, ms[i].Decode, shape, ms[i].Config.GEMMUsed, m, schema.Model(cfg))
		}
	}
	lines := strings.Split(strings.TrimSpace(progress.String()), "\n")
	if len(lines) != 1+len(o.Modes) || !strings.Contains(lines[0], "fresh parameters (seed 1337)") {
		t.Errorf("progress: want a model line naming the seed and one line per mode, got:\n%s", progress.String())
	}
	// The records carry what produced them, and read back as a decode
	// result (probe report, probe diff).
	start := time.Now()
	recs := o.Records(ms, []string{"probe", "decode"}, start)
	b, err := json.Marshal(recs)
	if err != nil {
		t.Fatal(err)
	}
	back, err := schema.DecodeDecode(b, "records")
	if err != nil {
		t.Fatalf("records do not read back: %v", err)
	}
	for i, r := range back {
		c := r.Config
		if r.Schema != schema.DecodeVersion || c.Model != schema.Model(o.Config) || c.Seed != o.Seed || c.Data != o.Data || c.Passes != o.Passes ||
			c.Probs != o.Probs || c.PinnedHost || c.GEMMUsed != ms[i].Config.GEMMUsed || c.GEMMUsed == "" || len(r.TokensPerSecPasses) != o.Passes ||
			r.Environment.GoVersion == "" || r.StartTime != start.UTC().Format(time.RFC3339) || !slices.Equal(r.CommandLine, []string{"probe", "decode"}) {
			t.Errorf("record %d: %+v, config %+v; want the run's configuration, environment, passes and start", i, r, c)
		}
	}
	var tab bytes.Buffer
	if err := report.WriteDecode(&tab, recs, table.Text); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(tab.String(), "\n"); got < 2+len(ms) {
		t.Errorf("table has %d lines, want a title, a header and %d rows:\n%s", got, len(ms), tab.String())
	}

	for name, bad := range map[string]func(*Options){
		"no modes":  func(o *Options) { o.Modes = nil },
		"no passes": func(o *Options) { o.Passes = 0 },
		"device":    func(o *Options) { o.Device = "tpu" },
		"gemm":      func(o *Options) { o.GEMM = "fast" },
	} {
		b := o
		bad(&b)
		if _, err := Run(b, nil); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
