package job

import (
	"bytes"
	"context"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"memprobe/schema"
)

// TestRerunFromConfig: a result read back from its JSON names its
// configuration well enough to run the job again with the same losses,
// bit for bit.
func TestRerunFromConfig(t *testing.T) {
	o := tinyJob(3)
	o.Trainer.GEMM = "naive"
	o.Trainer.Config.Batch = 8 // the naive GEMM is slow: 4 s a step at B = 32
	o.Trainer.Pathology.CacheScale = 2
	o.Preset, o.Plan, o.Phase = "tiny", "threads", "P6" // the label defaults to threads-P6
	o.CommandLine = []string{"probe", "train", "--preset", "tiny"}
	o.SampleInterval = 5 * time.Millisecond
	o.WarmupSteps = 0
	r1, err := Run(context.Background(), o, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	js, err := schema.Marshal(r1)
	if err != nil {
		t.Fatal(err)
	}
	back, err := schema.DecodeResult(js, "r1.json")
	if err != nil {
		t.Fatal(err)
	}
	c := back.Config
	if c.GEMM != "naive" || c.GEMMUsed != "naive" || c.Pathology.CacheScale != 2 || c.WarmupSteps != 0 ||
		c.SampleIntervalMs != 5 || c.SampleMaxPoints != 512 || c.Preset != "tiny" || c.Engine != "static" {
		t.Errorf("config %+v", c)
	}
	if back.StartTime == "" || strings.Join(back.CommandLine, " ") != "probe train --preset tiny" || back.Environment.GoVersion == "" {
		t.Errorf("start %q, command line %q, environment %+v", back.StartTime, back.CommandLine, back.Environment)
	}
	o2, err := OptionsFromConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	if o2.WarmupSteps != 0 || o2.SampleInterval != 5*time.Millisecond || o2.Plan != "threads" || o2.Phase != "P6" {
		t.Errorf("options %+v", o2)
	}
	if r1.Label != "threads-P6" {
		t.Errorf("label %q, want threads-P6 from the plan and phase", r1.Label)
	}
	r2, err := Run(context.Background(), o2, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if r2.Config != c {
		t.Errorf("the re-run's config\n%+v\ndiffers from\n%+v", r2.Config, c)
	}
	if len(r2.Losses) != len(back.Losses) {
		t.Fatalf("%d losses, want %d", len(r2.Losses), len(back.Losses))
	}
	for i := range back.Losses {
		if math.Float32bits(r2.Losses[i]) != math.Float32bits(back.Losses[i]) {
			t.Errorf("step %d: loss %v, first run %v (bits %08x, %08x)", i+1, r2.Losses[i], back.Losses[i],
				math.Float32bits(r2.Losses[i]), math.Float32bits(back.Losses[i]))
		}
	}
	// The JSON is the same shape again: everything but measurements.
	js2, _ := schema.Marshal(r2)
	if !bytes.Contains(js2, []byte(`"gemm_used": "naive"`)) {
		t.Errorf("re-run's JSON lacks gemm_used")
	}
}

func TestOptionsFromConfigErrors(t *testing.T) {
	good := configOf(&Options{Trainer: tinyJob(1).Trainer, Data: "synthetic:200KB", Steps: 1}, "naive")
	if _, err := OptionsFromConfig(good); err != nil {
		t.Fatalf("a valid configuration: %v", err)
	}
	for _, c := range []struct {
		edit func(*schema.Config)
		want string
	}{
		{func(c *schema.Config) { c.Data = "" }, "no data spec"},
		{func(c *schema.Config) { c.Threads = 0 }, "threads 0 out of range"},
		{func(c *schema.Config) { c.Steps = 0 }, "steps 0 out of range"},
		{func(c *schema.Config) { c.SampleIntervalMs = 0.1 }, "sample-interval 100µs is below the minimum"},
		{func(c *schema.Config) { c.Heads = 5 }, "not divisible by heads 5"},
	} {
		cfg := good
		c.edit(&cfg)
		if _, err := OptionsFromConfig(cfg); err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "configuration: ") {
			t.Errorf("got %v, want an error containing %q", err, c.want)
		}
	}
}
