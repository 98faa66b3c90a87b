package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"memprobe/run/job"
	"memprobe/trainer/decode"
	"memprobe/trainer/device"
)

// decodeFlags select the device and decode mode of the LM head in training
// (design note 003): with --decode MODE each executor runs its
// sequence's LM head through a decode head on --device instead of the host
// (trainer.Options.Decode and .Device).
type decodeFlags struct {
	mode   string
	device string
	fs     *pflag.FlagSet
}

func (f *decodeFlags) register(fs *pflag.FlagSet) {
	f.fs = fs
	fs.StringVar(&f.mode, "decode", "", "run the LM head on a device in this decode mode: per-token-copy, per-token-view, per-token-prealloc or batch (default: on the host)")
	fs.StringVar(&f.device, "device", "cpu", "device of the --decode head: cpu, or cuda (needs the NVIDIA driver and a GPU)")
}

// apply sets Decode and Device. --device without --decode is an error: the
// device serves only the decode head. A device name this build lacks is
// refused here, as a bad command line; whether the machine has the device
// (a driver, a GPU) is checkDevice's, a runtime error.
func (f *decodeFlags) apply(o *job.Options) error {
	if f.mode == "" {
		if o.Trainer.Decode != "" {
			// --plan decode chose the mode; --device picks where it runs.
			if err := device.Check(f.device); err != nil {
				return fmt.Errorf("--device: %w", err)
			}
			o.Trainer.Device = f.device
			return nil
		}
		if f.fs != nil && f.fs.Changed("device") {
			return fmt.Errorf("--device %s: a device runs only the decode head; add --decode MODE or --plan decode", f.device)
		}
		return nil
	}
	if _, err := decode.ParseMode(f.mode); err != nil {
		return fmt.Errorf("--decode: %w", err)
	}
	if err := device.Check(f.device); err != nil {
		return fmt.Errorf("--device: %w", err)
	}
	o.Trainer.Decode = f.mode
	o.Trainer.Device = f.device
	return nil
}

// checkDevice refuses, before any work, a decode device this machine
// cannot open (cuda without a driver): exit status 1, as probe decode
// --device cuda gives, not the 2 of a bad command line.
func checkDevice(o *job.Options) error {
	if o.Trainer.Decode == "" {
		return nil
	}
	if err := device.Available(o.Trainer.Device); err != nil {
		return fmt.Errorf("--device: %w", err)
	}
	return nil
}
