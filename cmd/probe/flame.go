package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/pprof/profile"
	"github.com/spf13/cobra"

	"memprobe/internal/atomicfile"
	"memprobe/internal/table"
	"memprobe/report/flame"
)

// flameSamples are the sample types --sample accepts: a heap profile's
// four and a CPU profile's time.
var flameSamples = []string{"inuse_space", "alloc_space", "alloc_objects", "inuse_objects", "cpu"}

// flameCmdFlags are the command-line options of `probe flame`.
type flameCmdFlags struct {
	out, sample, base string
	// top > 0 prints the text view of the top functions instead of
	// drawing.
	top int
}

func newFlameCmd(stdout, stderr io.Writer) *cobra.Command {
	var f flameCmdFlags
	cmd := &cobra.Command{
		Use:   "flame PROFILE [-o out.svg | --top N] [--sample TYPE] [--base BASE]",
		Short: "draw a pprof profile as an interactive SVG flame graph; --base draws the change from BASE",
		Long: `flame reads a pprof profile (probe train --memprofile, --cpuprofile, ...)
and writes a self-contained SVG flame graph: frames merged by function name
along the stack, the root at the top, each frame as wide as its share of
the sample value, coloured by package. Hovering a frame shows its function,
value and share; clicking zooms into it, clicking the background resets.

--sample picks the value (inuse_space, alloc_space, alloc_objects,
inuse_objects for heap profiles, cpu for CPU profiles); the default is the
profile's default sample type.

--base BASE draws a differential flame graph: PROFILE's shape, each frame
red when it grew against the same path of functions in BASE and blue when
it shrank, the tooltip giving both values and the change.

-o defaults to PROFILE.svg; "-" writes to stdout.

--top N prints, instead of a graph, the text view of pprof -top: the N
functions of the largest flat value (the samples whose leaf they are),
each with its cum value (every sample through it), and their shares.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if err := cobra.ExactArgs(1)(cmd, args); err != nil {
				return usageError{fmt.Errorf("flame: want one profile: %w", err)}
			}
			if f.top < 0 {
				return usageError{fmt.Errorf("--top %d: want a number of functions, 1 or more", f.top)}
			}
			if f.top > 0 && (f.out != "" || f.base != "") {
				return usageError{fmt.Errorf("--top prints text: it takes no -o or --base")}
			}
			if f.sample != "" && !slices.Contains(flameSamples, f.sample) {
				return usageError{fmt.Errorf("--sample %q: want one of %s", f.sample, strings.Join(flameSamples, ", "))}
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			return runFlame(stdout, stderr, args[0], f)
		},
	}
	cmd.Flags().StringVarP(&f.out, "out", "o", "", `the SVG file to write (default PROFILE.svg; "-" for stdout)`)
	cmd.Flags().StringVar(&f.sample, "sample", "", "the sample value to draw: "+strings.Join(flameSamples, ", ")+" (default: the profile's default)")
	cmd.Flags().StringVar(&f.base, "base", "", "a base profile: colour each frame by its change from it")
	cmd.Flags().IntVar(&f.top, "top", 0, "print the N functions of the largest flat value as text (pprof -top) instead of drawing")
	return cmd
}

func runFlame(stdout, stderr io.Writer, path string, f flameCmdFlags) error {
	if f.top > 0 {
		g, err := flameGraph(path, f.sample)
		if err != nil {
			return err
		}
		return flame.WriteTop(stdout, g, f.top, table.Text)
	}
	out := f.out
	if out == "" {
		out = path + ".svg"
	}
	// The graph must not replace a profile it reads, and must be
	// writable, before any work.
	if out != "-" {
		if err := atomicfile.CheckDistinct([]atomicfile.Path{{Flag: "-o", Path: out}},
			[]atomicfile.Path{{Flag: "PROFILE", Path: path}, {Flag: "--base", Path: f.base}}); err != nil {
			return usageError{err}
		}
		if err := atomicfile.CheckWritable(out); err != nil {
			return usageError{fmt.Errorf("-o %w", err)}
		}
	}
	g, err := flameGraph(path, f.sample)
	if err != nil {
		return err
	}
	title := filepath.Base(path)
	if f.base != "" {
		base, err := flameGraph(f.base, g.SampleType)
		if err != nil {
			return err
		}
		if g, err = flame.Diff(base, g); err != nil {
			return fmt.Errorf("flame --base %s: %w", f.base, err)
		}
		title = filepath.Base(f.base) + " → " + title
	}
	write := func(w io.Writer) error { return flame.WriteSVG(w, g, flame.Options{Title: title}) }
	if out == "-" {
		return write(stdout)
	}
	if err := atomicfile.Write(out, write); err != nil {
		return fmt.Errorf("writing flame graph: %w", err)
	}
	fmt.Fprintf(stderr, "probe flame: wrote %s\n", out)
	return nil
}

// flameGraph reads the profile at path and builds its flame graph of the
// sample type named sample ("" for the profile's default).
func flameGraph(path, sample string) (*flame.Graph, error) {
	r, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading profile: %w", err)
	}
	defer r.Close()
	p, err := profile.Parse(r)
	if err != nil {
		return nil, fmt.Errorf("parsing profile %s: %w", path, err)
	}
	i, err := flame.SampleIndex(p, sample)
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", path, err)
	}
	return flame.Build(p, i)
}
