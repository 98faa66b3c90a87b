package runner

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

	"memprobe/internal/childproc"
	"memprobe/schema"
)

// RunDecode measures runs times, each run this program again (`probe
// decode` and childArgs, its JSON to a temporary file), one after another
// so that they never share the machine, and pools the runs' records
// (PoolDecode), as Run measures a plan's phases in fresh children. Each
// run's progress goes to stderr, its lines prefixed "run I/N: ". A run that fails ends the measurement with its
// error; one whose only failure is the check against the cpu device (its
// JSON written, exit status 1) is pooled, and the pooled check fails.
func RunDecode(stderr io.Writer, childArgs []string, runs int) ([]schema.DecodeRecord, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("--runs %d: finding this program to run again: %w", runs, err)
	}
	dir, err := os.MkdirTemp("", "probe-decode-runs-")
	if err != nil {
		return nil, fmt.Errorf("--runs %d: %w", runs, err)
	}
	defer os.RemoveAll(dir)
	names := make([]string, runs)
	sets := make([][]schema.DecodeRecord, runs)
	for i := range runs {
		label := fmt.Sprintf("run %d/%d", i+1, runs)
		path := filepath.Join(dir, fmt.Sprintf("run-%d.json", i+1))
		out := &linePrefixer{w: stderr, prefix: label + ": "}
		cmd := exec.Command(exe, append(childArgs, "--runs=1", "--json="+path, "--format=csv")...)
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
				return nil, fmt.Errorf("decode --runs %d: %s failed (%v): %s", runs, label, exit, strings.TrimPrefix(why, "probe: "))
			}
			return nil, fmt.Errorf("decode --runs %d: %s: %w", runs, label, runErr)
		}
		if readErr != nil {
			return nil, fmt.Errorf("decode --runs %d: %s: %w", runs, label, readErr)
		}
		names[i], sets[i] = label, recs
	}
	return PoolDecode(names, sets, os.Args)
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

// linePrefixer writes whole lines to w, each with prefix, and keeps the
// last non-empty one (a failed run's error). Flush writes a final line
// that has no newline.
type linePrefixer struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
	buf    []byte
	last   string
}

func (p *linePrefixer) Write(b []byte) (int, error) {
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
func (p *linePrefixer) Flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.buf) > 0 {
		p.line(string(p.buf))
		p.buf = nil
	}
}

func (p *linePrefixer) line(l string) {
	if strings.TrimSpace(l) != "" {
		p.last = l
	}
	fmt.Fprintf(p.w, "%s%s\n", p.prefix, l)
}
