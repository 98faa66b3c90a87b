package main

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"memprobe/trainer/gemm"
	"memprobe/trainer/model"
)

// gemmHelp is --gemm's help: what the flag picks (what), then the backends
// of this binary, which depend on its build tags and on the CPU.
func gemmHelp(what string) string {
	return fmt.Sprintf("%s: auto (the fastest here, %s) or one of %s", what, gemm.DefaultName(), strings.Join(gemm.Names(), ", "))
}

// shapeFlags are the model-shape flags `probe train` and `probe decode`
// share: a preset and per-field overrides (0 keeps the preset's value).
type shapeFlags struct {
	preset   string
	override model.Config
}

// register adds --preset and the per-field flags; presetHelp, contextHelp
// and batchHelp let a command say what those mean for it.
func (f *shapeFlags) register(fs *pflag.FlagSet, presetHelp, contextHelp, batchHelp string) {
	fs.StringVar(&f.preset, "preset", "seed", presetHelp)
	fs.IntVar(&f.override.Vocab, "vocab", 0, "vocabulary size V (0: preset)")
	fs.IntVar(&f.override.Dim, "dim", 0, "channels C (0: preset)")
	fs.IntVar(&f.override.Layers, "layers", 0, "layers L (0: preset)")
	fs.IntVar(&f.override.Heads, "heads", 0, "attention heads NH (0: preset)")
	fs.IntVar(&f.override.FF, "ff", 0, "feed-forward width (0: preset)")
	fs.IntVar(&f.override.Context, "context", 0, contextHelp)
	fs.IntVar(&f.override.Batch, "batch", 0, batchHelp)
}

// fields lists the overrides with their flag names, in flag order.
func (f *shapeFlags) fields() []struct {
	v    int
	name string
} {
	o := f.override
	return []struct {
		v    int
		name string
	}{
		{o.Vocab, "vocab"}, {o.Dim, "dim"}, {o.Layers, "layers"}, {o.Heads, "heads"},
		{o.FF, "ff"}, {o.Context, "context"}, {o.Batch, "batch"},
	}
}

// checkSigns rejects a negative override.
func (f *shapeFlags) checkSigns() error {
	for _, p := range f.fields() {
		if p.v < 0 {
			return fmt.Errorf("--%s %d must be positive", p.name, p.v)
		}
	}
	return nil
}

// config is the preset with the overrides applied (not yet validated).
func (f *shapeFlags) config() (model.Config, error) {
	if err := f.checkSigns(); err != nil {
		return model.Config{}, err
	}
	cfg, err := model.Preset(f.preset)
	if err != nil {
		return model.Config{}, err
	}
	applyOverrides(&cfg, f.override)
	return cfg, nil
}

// applyOverrides sets the nonzero fields of over in cfg.
func applyOverrides(cfg *model.Config, over model.Config) {
	for _, p := range []struct{ dst, v *int }{
		{&cfg.Vocab, &over.Vocab}, {&cfg.Dim, &over.Dim}, {&cfg.Layers, &over.Layers}, {&cfg.Heads, &over.Heads},
		{&cfg.FF, &over.FF}, {&cfg.Context, &over.Context}, {&cfg.Batch, &over.Batch},
	} {
		if *p.v > 0 {
			*p.dst = *p.v
		}
	}
}
