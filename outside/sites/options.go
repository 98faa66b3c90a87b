package sites

import (
	"fmt"
	"strings"
)

// The library's options reach it in its environment (Env).
const (
	// EnvDir and EnvRate tell the library where to write and how often
	// to sample.
	EnvDir  = "MEMPROBE_SITES_DIR"
	EnvRate = "MEMPROBE_SITES_RATE"
	// DefaultRate is the mean sampling interval: one sample per 512 KiB
	// allocated, as tcmalloc and Go's heap profiler. The library has no
	// default of its own: it is always given the rate.
	DefaultRate = 512 << 10
)

// RecordOptions are how the library records a program. Check is their
// one owner: the library is given what Check leaves (Env) and refuses
// anything else, with a message on stderr naming the variable and no
// records; the rate it used comes back only in its records' header
// (schema.Sites.RateBytes).
type RecordOptions struct {
	// Rate is the mean sampling interval in bytes; 1 records every
	// allocation, exactly. 0 asks for DefaultRate.
	Rate int64
}

// Check fills in o's defaults and validates it.
func (o *RecordOptions) Check() error {
	if o.Rate == 0 {
		o.Rate = DefaultRate
	}
	return CheckRate(o.Rate)
}

// CheckRate is the rule for a rate given (--sites-rate): a number of
// bytes, 1 or more. A command line that was given 0 asks it for that 0,
// which RecordOptions reads as not given.
func CheckRate(rate int64) error {
	if rate < 1 {
		return fmt.Errorf("sites-rate %d: want a number of bytes, 1 or more", rate)
	}
	return nil
}

// Env is env (the program's environment) with the library preloaded and
// told to write to dir at rate, as RecordOptions.Check leaves it: an
// LD_PRELOAD already there is kept, after the library.
func Env(env []string, lib, dir string, rate int64) []string {
	out := make([]string, 0, len(env)+3)
	pre := lib
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "LD_PRELOAD":
			if v != "" {
				pre = lib + " " + v
			}
			continue
		case EnvDir, EnvRate:
			continue
		}
		out = append(out, kv)
	}
	return append(out, "LD_PRELOAD="+pre, EnvDir+"="+dir, fmt.Sprintf("%s=%d", EnvRate, rate))
}
