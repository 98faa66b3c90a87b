package job

import (
	"errors"
	"fmt"
	"math"
	"time"

	"memprobe/instrument/sampler"
	"memprobe/schema"
	"memprobe/trainer"
	"memprobe/trainer/gemm"
	"memprobe/trainer/model"
)

// Environment is schema.CurrentEnvironment with what only the trainer
// knows filled in: the OpenBLAS build's configuration string.
func Environment() schema.Environment {
	e := schema.CurrentEnvironment()
	e.OpenBLASConfig = gemm.OpenBLASConfig()
	return e
}

// environment is what Run records; a variable so that tests can check a
// result against a fixed environment.
var environment = Environment

// configOf is the configuration o runs, defaults resolved, with the GEMM
// backend that was used.
func configOf(o *Options, gemmUsed string) schema.Config {
	t := &o.Trainer
	c := schema.Config{
		Preset: o.Preset, Model: schema.Model(t.Config), Optimizer: schema.Optimizer(t.Optimizer),
		Threads: t.Threads, Executors: t.Executors,
		Plan: o.Plan, Phase: o.Phase,
		Pathology: schema.Pathology(t.Pathology), Engine: t.Engine, Tape: schema.Tape(t.Tape), Side: schema.SideWork(t.Side),
		Decode: t.Decode, Device: t.Device,
		GEMM: t.GEMM, GEMMUsed: gemmUsed,
		Data: o.Data, DataSeed: o.DataSeed, Seed: t.Seed, Steps: o.Steps,
		Resume: o.Resume, GenerateTokens: o.Generate,
		Instruments: !o.NoInstruments, WarmupSteps: o.WarmupSteps,
		SampleIntervalMs: float64(o.SampleInterval) / float64(time.Millisecond), SampleMaxPoints: o.SampleMaxPoints,
	}
	if c.Engine == "" {
		c.Engine = "static"
	}
	if c.GEMM == "" {
		c.GEMM = "auto"
	}
	if o.SampleInterval == 0 {
		c.SampleIntervalMs = float64(sampler.DefaultInterval) / float64(time.Millisecond)
	}
	if c.SampleMaxPoints == 0 {
		c.SampleMaxPoints = sampler.DefaultMaxPoints
	}
	return c
}

// commandLine is args, never nil.
func commandLine(args []string) []string {
	if args == nil {
		return []string{}
	}
	return args
}

// OptionsFromConfig rebuilds the options of the job that wrote a result
// from its configuration (schema.Result.Config), so that the job runs
// again with the same losses, bit for bit, where the GEMM backend asked
// for resolves to the same one (set c.GEMM to c.GEMMUsed to pin it). The
// pathology switches, not the plan and phase names, say what runs. What
// a result does not record is left at its default: no checkpoint is
// written, no profiles, progress every about 20 steps, no command line.
func OptionsFromConfig(c schema.Config) (Options, error) {
	if c.Data == "" {
		return Options{}, errors.New("configuration: no data spec")
	}
	o := Options{
		Trainer: trainer.Options{
			Config: model.Config(c.Model), Optimizer: model.AdamW(c.Optimizer),
			Threads: c.Threads, Executors: c.Executors, Seed: c.Seed, GEMM: c.GEMM,
			Pathology: trainer.Pathology(c.Pathology), Engine: c.Engine,
			Tape: trainer.TapeOptions(c.Tape), Side: trainer.SideWork(c.Side),
			Decode: c.Decode, Device: c.Device,
		},
		Data: c.Data, DataSeed: c.DataSeed, Steps: c.Steps,
		Resume: c.Resume, Generate: c.GenerateTokens,
		NoInstruments:   !c.Instruments,
		SampleInterval:  time.Duration(math.Round(c.SampleIntervalMs * float64(time.Millisecond))),
		SampleMaxPoints: c.SampleMaxPoints,
		WarmupSteps:     c.WarmupSteps,
		Preset:          c.Preset, Plan: c.Plan, Phase: c.Phase,
	}
	if err := o.Validate(); err != nil {
		return Options{}, fmt.Errorf("configuration: %w", err)
	}
	return o, nil
}
