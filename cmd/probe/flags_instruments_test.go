package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// parseTrain parses args as `probe train` flags and builds the options.
func parseTrain(t *testing.T, args ...string) (*trainFlags, error) {
	t.Helper()
	var f trainFlags
	fs := pflag.NewFlagSet("train", pflag.ContinueOnError)
	f.register(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return &f, nil
}

func TestInstrumentFlagsDefaults(t *testing.T) {
	f, err := parseTrain(t)
	if err != nil {
		t.Fatal(err)
	}
	o, err := f.options()
	if err != nil {
		t.Fatal(err)
	}
	if o.NoInstruments || o.SampleInterval != 10*time.Millisecond || o.WarmupSteps != 1 || o.Label != "" {
		t.Errorf("defaults: %+v", o)
	}
	if o.Profiling.Enabled() {
		t.Errorf("profiling on by default: %+v", o.Profiling)
	}
	if o.Trainer.Ledger == nil {
		t.Error("no ledger by default")
	}
}

func TestInstrumentFlagsSet(t *testing.T) {
	f, err := parseTrain(t, "--no-instruments", "--sample-interval", "2ms", "--warmup-steps", "0",
		"--profile-dir", "/tmp/p", "--cpuprofile", "c.pprof", "--heap-peak-profiles", "0",
		"--pprof-addr", "127.0.0.1:0", "--profile-name", "x")
	if err != nil {
		t.Fatal(err)
	}
	o, err := f.options()
	if err != nil {
		t.Fatal(err)
	}
	p := o.Profiling
	if !o.NoInstruments || o.SampleInterval != 2*time.Millisecond || o.WarmupSteps != 0 ||
		p.Dir != "/tmp/p" || p.CPU != "c.pprof" || p.PeakMax != 0 || p.PprofAddr != "127.0.0.1:0" || p.Name != "x" {
		t.Errorf("options: %+v", o)
	}
	if got := p.Paths()["heap"]; got != "/tmp/p/x.heap.pprof" {
		t.Errorf("heap path %q", got)
	}
}

// TestInstrumentFlagsErrors runs the command: a bad instrument flag is a
// usage error (exit status 2) naming the flag, found by the one validation
// in job.Run before anything trains.
func TestInstrumentFlagsErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--sample-interval", "500us"}, "sample-interval 500µs is below the minimum 1ms"},
		{[]string{"--pprof-addr", "0.0.0.0:6060"}, `--pprof-addr "0.0.0.0:6060": 0.0.0.0 listens on every interface`},
		{[]string{"--pprof-addr", ":6060"}, "empty host listens on every interface"},
		{[]string{"--pprof-addr", "10.1.2.3:6060"}, "not a loopback address"},
		{[]string{"--pprof-allow-remote"}, "pprof-allow-remote needs pprof-addr"},
		{[]string{"--sample-max-points", "1"}, "sample-max-points 1 must be 0 (default) or >= 2"},
		{[]string{"--heap-peak-profiles", "-1"}, "heap-peak-profiles -1 must be >= 0"},
	} {
		var out, errb bytes.Buffer
		err := run(&out, &errb, append([]string{"train", "--steps", "1"}, tc.args...))
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want a usage error containing %q", tc.args, err, tc.want)
		}
		if out.Len() != 0 {
			t.Errorf("%v: wrote %q to stdout", tc.args, out.String())
		}
	}
	// Allowed explicitly: the address is accepted (the run itself is not
	// started here).
	f, err := parseTrain(t, "--pprof-addr", "0.0.0.0:0", "--pprof-allow-remote")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.options(); err != nil {
		t.Errorf("--pprof-allow-remote: %v", err)
	}
}

// TestInstrumentFlagsDocumented checks that docs/instruments.md mentions
// every flag the instruments register.
func TestInstrumentFlagsDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "instruments.md"))
	if err != nil {
		t.Fatal(err)
	}
	var f instrumentFlags
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	f.register(fs)
	fs.VisitAll(func(fl *pflag.Flag) {
		if !bytes.Contains(doc, []byte("--"+fl.Name)) {
			t.Errorf("docs/instruments.md does not mention --%s", fl.Name)
		}
	})
}
