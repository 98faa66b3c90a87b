package trainer_test

import (
	"context"
	"io"
	"runtime"
	"strings"
	"testing"

	"memprobe/instrument/allocsite"
	"memprobe/ledger"
	"memprobe/run/job"
	"memprobe/trainer"
	"memprobe/trainer/model"
)

// TestPlantedLedgerMakeIsProgram: a buffer made through ledger.Make in
// every step (the leakBatches plant) is the program's allocation, named at
// the trainer's line that asked for it, not the probe's because the ledger
// lives under memprobe/probe/.
func TestPlantedLedgerMakeIsProgram(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the instruments read /proc")
	}
	if testing.Short() {
		t.Skip("two instrumented training runs")
	}
	cfg := model.Presets["tiny"]
	o := job.Options{
		Trainer: trainer.Options{Config: cfg, Optimizer: model.DefaultAdamW, Threads: 2, Seed: 1, GEMM: "naive", Ledger: ledger.New()},
		Data:    "synthetic:200KB", DataSeed: 1, Steps: 6, WarmupSteps: job.DefaultWarmupSteps,
	}
	run := func() *allocsite.Report {
		r, err := job.Run(context.Background(), o, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if r.AllocsBySite == nil {
			t.Fatal("no allocs_by_site")
		}
		return r.AllocsBySite
	}
	clean := run()
	undo := trainer.PlantDefects(0, false, true)
	defer undo()
	o.Trainer.Ledger = ledger.New()
	planted := run()

	want := float64(3 * cfg.Batch * cfg.Context * 4) // one int32 batch buffer a step
	got := planted.ProgramBytesPerStep() - clean.ProgramBytesPerStep()
	t.Logf("program bytes/step: clean %.0f, planted %.0f (+%.0f, the plant makes %.0f)", clean.ProgramBytesPerStep(), planted.ProgramBytesPerStep(), got, want)
	if got < want {
		t.Errorf("program bytes/step moved by %.0f with a %.0f B/step plant", got, want)
	}
	var site *allocsite.Site
	for i, s := range planted.Sites {
		if s.Function == "memprobe/trainer.(*Trainer).stepBody" {
			site = &planted.Sites[i]
		}
	}
	if site == nil {
		t.Fatalf("no site at trainer.(*Trainer).stepBody among %+v", planted.Sites)
	}
	if site.Class != allocsite.Program || !strings.HasSuffix(site.File, "step.go") || site.BytesPerStep < want {
		t.Errorf("planted site %s %s:%d %.0f B/step, want program at step.go with %.0f B/step", site.Class, site.File, site.Line, site.BytesPerStep, want)
	}
}
