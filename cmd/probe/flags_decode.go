package main

import (
	"github.com/spf13/pflag"

	"memprobe/probe/job"
)

// decodeFlags select the device and decode mode of the LM head in training
// (issue 5).
type decodeFlags struct{}

func (f *decodeFlags) register(fs *pflag.FlagSet) {}

func (f *decodeFlags) apply(o *job.Options) error { return nil }
