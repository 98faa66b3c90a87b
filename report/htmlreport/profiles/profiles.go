// Package profiles finds the pprof files a run report's repetitions wrote
// (`probe run --profile-dir`, each result's `profiles`) and resolves them
// against the report's directory, never outside it. It is the part of the
// HTML report that the lean build needs too: `probe report` names the
// profiles in its text and markdown tables (Table), and package htmlreport
// (viz builds) links them and draws the heaviest phases' flame graphs.
package profiles

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"memprobe/internal/table"
	"memprobe/schema"
)

// Ref is one profile file of one repetition of a run.
type Ref struct {
	Run        string // the run's name ("threads-before")
	Plan       string
	Phase      string
	Repetition int    // from 1, in the order the repetitions ran
	Kind       string // cpu, heap, allocs, mutex, block or heap-peak
	// Path is the file as the result records it: relative to the
	// directory probe run ran in, or absolute.
	Path string
	// HeapLiveBytes is, for heap-peak, the live heap that triggered it.
	HeapLiveBytes int64
}

// List returns every profile the report's repetitions wrote, run by run in
// the report's order, then repetition by repetition in the order each
// result lists them; nil when there is none.
func List(rep *schema.Report) []Ref {
	var out []Ref
	for i := range rep.Runs {
		run := &rep.Runs[i]
		for k := range run.Repetitions {
			p := run.Repetitions[k].Profiles
			if p == nil {
				continue
			}
			for _, f := range p.Files {
				out = append(out, Ref{Run: run.Name, Plan: run.Plan, Phase: run.Phase, Repetition: k + 1,
					Kind: f.Kind, Path: f.Path, HeapLiveBytes: f.HeapLiveBytes})
			}
		}
	}
	return out
}

// ErrOutside is wrapped by Resolve's error for a path that leads out of
// the report's directory.
var ErrOutside = errors.New("outside the report's directory")

// Resolve turns a recorded profile path into a path relative to dir, the
// report's directory: a relative path is taken as relative to dir (where
// `probe run` writes the report by default, beside --profile-dir); an
// absolute one must lie under dir. A path that leads out of dir ("..",
// "/etc/passwd", a dir elsewhere) is an error wrapping ErrOutside. Resolve
// reads nothing: Open also refuses symbolic links that leave dir.
func Resolve(dir, path string) (string, error) {
	if path == "" {
		return "", fmt.Errorf("empty profile path")
	}
	rel := filepath.Clean(path)
	if filepath.IsAbs(path) {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return "", fmt.Errorf("profile %s: %w", path, err)
		}
		if rel, err = filepath.Rel(abs, path); err != nil {
			return "", fmt.Errorf("profile %s: %w", path, ErrOutside)
		}
	}
	if !filepath.IsLocal(rel) {
		return "", fmt.Errorf("profile %s: %w", path, ErrOutside)
	}
	return rel, nil
}

// Open opens the recorded profile path under dir (Resolve), through an
// os.Root, so that neither ".." nor a symbolic link can lead out of dir.
func Open(dir, path string) (*os.File, error) {
	rel, err := Resolve(dir, path)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", path, err)
	}
	defer root.Close()
	f, err := root.Open(rel)
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", path, err)
	}
	return f, nil
}

// Table lists the profiles of List(rep), one row per repetition: the run,
// the repetition and its files, written as DIR/NAME.{cpu,heap,...}.pprof
// when they share a name (as --profile-dir writes them), with the number of
// heap-peak profiles and the largest live heap among them; nil when the
// report has no profile.
func Table(rep *schema.Report) *table.Table {
	refs := List(rep)
	if len(refs) == 0 {
		return nil
	}
	t := table.New("profiles written by probe run --profile-dir (paths as recorded)",
		table.Column{Name: "run"},
		table.Column{Name: "rep", Kind: table.Int},
		table.Column{Name: "files"},
		table.Column{Name: "heap peaks", Kind: table.Int},
		table.Column{Name: "largest peak", Kind: table.Bytes})
	for len(refs) > 0 {
		n := 1
		for n < len(refs) && refs[n].Run == refs[0].Run && refs[n].Repetition == refs[0].Repetition {
			n++
		}
		one := refs[:n]
		refs = refs[n:]
		var files []string
		var peaks int
		var largest int64
		for _, r := range one {
			if r.Kind == "heap-peak" {
				peaks++
				largest = max(largest, r.HeapLiveBytes)
				continue
			}
			files = append(files, r.Path)
		}
		var top any
		if peaks > 0 {
			top = largest
		}
		t.Add(one[0].Run, one[0].Repetition, compact(files), peaks, top)
	}
	t.Note("draw one: probe flame FILE (-o out.svg); probe report --html links them and draws the heaviest phases' flame graphs")
	return t
}

// WriteTable renders Table(rep) in format f, nothing when the report has
// no profile.
func WriteTable(w io.Writer, rep *schema.Report, f table.Format) error {
	t := Table(rep)
	if t == nil {
		return nil
	}
	return t.Render(w, f)
}

// compact writes paths "d/n.a.pprof", "d/n.b.pprof" as "d/n.{a,b}.pprof"
// when they share everything but the part before ".pprof"; else it joins
// them with ", ".
func compact(paths []string) string {
	if len(paths) < 2 {
		return strings.Join(paths, ", ")
	}
	var prefix string
	var kinds []string
	for _, p := range paths {
		stem, ok := strings.CutSuffix(p, ".pprof")
		i := strings.LastIndexByte(stem, '.')
		if !ok || i < 0 || (prefix != "" && stem[:i+1] != prefix) || slices.Contains(kinds, stem[i+1:]) {
			return strings.Join(paths, ", ")
		}
		prefix = stem[:i+1]
		kinds = append(kinds, stem[i+1:])
	}
	return prefix + "{" + strings.Join(kinds, ",") + "}.pprof"
}
