package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/spf13/pflag"

	"memprobe/internal/childproc"
	"memprobe/report"
	"memprobe/schema"
)

// maxDecodeRuns bounds --runs: each run is a process that builds the
// model and its hidden states again, so more than this is a mistake.
const maxDecodeRuns = 1000

// parentDecodeFlags are the flags of `probe decode --runs N` that the
// parent keeps for itself: what it writes (the pooled tables and JSON)
// and the runs. Each child gets every other flag the user gave.
var parentDecodeFlags = map[string]bool{"runs": true, "json": true, "format": true}

// decodeChildArgs is the command line of one run: `decode`, every flag
// given on fs but the parent's, as --name=value so that no value is
// read as a flag.
func decodeChildArgs(fs *pflag.FlagSet) []string {
	args := []string{"decode"}
	if fs == nil {
		return args
	}
	fs.Visit(func(f *pflag.Flag) {
		if !parentDecodeFlags[f.Name] {
			args = append(args, "--"+f.Name+"="+f.Value.String())
		}
	})
	return args
}

// runDecodeRuns measures o.runs times, each run this program again
// (`probe decode`, o.childArgs, its JSON to a temporary file), one after
// another so that they never share the machine, and pools the runs' records
// (report.PoolDecode). Each run's progress goes to stderr, its lines
// prefixed "run I/N: ". A run that fails ends the measurement with its
// error; one whose only failure is the check against the cpu device (its
// JSON written, exit status 1) is pooled, and the pooled check fails.
func runDecodeRuns(stderr io.Writer, o decodeOptions) ([]schema.DecodeRecord, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("--runs %d: finding this program to run again: %w", o.runs, err)
	}
	dir, err := os.MkdirTemp("", "probe-decode-runs-")
	if err != nil {
		return nil, fmt.Errorf("--runs %d: %w", o.runs, err)
	}
	defer os.RemoveAll(dir)
	names := make([]string, o.runs)
	sets := make([][]schema.DecodeRecord, o.runs)
	for i := range o.runs {
		label := fmt.Sprintf("run %d/%d", i+1, o.runs)
		path := filepath.Join(dir, fmt.Sprintf("run-%d.json", i+1))
		out := &prefixWriter{w: stderr, prefix: label + ": "}
		cmd := exec.Command(exe, append(o.childArgs, "--runs=1", "--json="+path, "--format=csv")...)
		cmd.Stdout, cmd.Stderr = io.Discard, out
		// A run dies with this process (childproc): an interrupted
		// measurement leaves no decoder behind on the machine it measures.
		runErr := childproc.Run(cmd)
		out.Flush()
		recs, readErr := schema.ReadDecode(path)
		if runErr != nil && (readErr != nil || !failedCheck(recs)) {
			why := out.last
			if why == "" {
				why = "no error message"
			}
			var exit *exec.ExitError
			if errors.As(runErr, &exit) {
				return nil, fmt.Errorf("decode --runs %d: %s failed (%v): %s", o.runs, label, exit, strings.TrimPrefix(why, "probe: "))
			}
			return nil, fmt.Errorf("decode --runs %d: %s: %w", o.runs, label, runErr)
		}
		if readErr != nil {
			return nil, fmt.Errorf("decode --runs %d: %s: %w", o.runs, label, readErr)
		}
		names[i], sets[i] = label, recs
	}
	return report.PoolDecode(names, sets, os.Args)
}

// failedCheck says whether a record's check against the cpu device failed:
// the one failure after which a run has still written its figures.
func failedCheck(recs []schema.DecodeRecord) bool {
	for _, r := range recs {
		if r.Check != nil && !r.Check.Pass {
			return true
		}
	}
	return false
}

// prefixWriter writes whole lines to w, each with prefix, and keeps the
// last non-empty one (a failed run's error). Flush writes a final line
// that has no newline.
type prefixWriter struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
	buf    []byte
	last   string
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			return len(b), nil
		}
		p.line(string(p.buf[:i]))
		p.buf = p.buf[i+1:]
	}
}

// Flush writes what is left of an unfinished line.
func (p *prefixWriter) Flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.buf) > 0 {
		p.line(string(p.buf))
		p.buf = nil
	}
}

func (p *prefixWriter) line(l string) {
	if strings.TrimSpace(l) != "" {
		p.last = l
	}
	fmt.Fprintf(p.w, "%s%s\n", p.prefix, l)
}
