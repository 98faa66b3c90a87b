package runner

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"memprobe/internal/table"
)

// WritePlan prints the children a run would start (--dry-run): per
// configuration its plan, phase, sweep point, predicted peak RSS, the
// estimated wall time of one repetition and whether the memory limit
// refuses it; then the scale of each plan and every child's command line
// (exe stands for the re-executed binary, JSON for the result file).
func WritePlan(w io.Writer, cs []Config, o Options, exe string, f table.Format) error {
	t := table.New(fmt.Sprintf("%d configurations × %d repetitions, one child at a time; --mem-limit %s, --timeout %v",
		len(cs), o.Count, iec(o.MemLimit), o.Timeout),
		table.Column{Name: "#", Kind: table.Int},
		table.Column{Name: "plan"},
		table.Column{Name: "phase"},
		table.Column{Name: "sweep"},
		table.Column{Name: "predicted peak RSS", Kind: table.Bytes},
		table.Column{Name: "estimate", Unit: "s", Kind: table.Float, Decimals: 1},
		table.Column{Name: "status"},
	)
	var total float64
	partial := false
	for _, c := range cs {
		var rss any = c.Prediction.PeakRSSBytes
		var est any = c.Prediction.Seconds
		if c.Process != nil {
			rss, est = "-", nil // a program of the user's: no model
		} else if c.Prediction.Partial {
			rss = "~" + iec(c.Prediction.PeakRSSBytes)
			partial = true
		}
		status := "run"
		if c.Prediction.PeakRSSBytes > o.MemLimit {
			status = "refused: above --mem-limit"
		} else {
			total += float64(o.Count) * c.Prediction.Seconds
		}
		t.Add(c.Index, c.Plan, c.Phase, sweepString(c.Sweep), rss, est, status)
	}
	if len(cs) > 0 && cs[0].Process != nil {
		t.Notes = append(t.Notes, "a plan file's programs have no memory model: nothing is predicted or refused up front; --mem-limit kills a program whose RSS passes it")
	} else {
		t.Notes = append(t.Notes, fmt.Sprintf("estimated total: %.0f s (a rough model of a loaded 2-core machine, not a measurement)", total))
	}
	if partial {
		t.Notes = append(t.Notes, "~ : with the tape engine's graphs, which the memory model leaves out, estimated at 2x a sequence's activations per graph held")
	}
	if err := t.Render(w, f); err != nil {
		return err
	}
	if f == table.CSV {
		return nil
	}
	seen := map[string]bool{}
	fmt.Fprintln(w, "\nscales:")
	for _, c := range cs {
		if !seen[c.Plan] {
			seen[c.Plan] = true
			fmt.Fprintf(w, "  %s: %s\n", c.Plan, c.scaleString())
		}
	}
	if o.PlanFile != nil {
		if s := o.PlanFile.SetupCommand(map[string]string{"probe": exe, "tmp": o.tmpOrPlaceholder()}); s != nil {
			fmt.Fprintf(w, "\nsetup (once, in %s): %s\n", o.PlanFile.Dir, strings.Join(s, " "))
		}
		fmt.Fprintf(w, "\nprograms (in %s, each watched from outside as probe exec watches it):\n", o.PlanFile.Dir)
		for _, c := range cs {
			fmt.Fprintf(w, "  #%d  %s\n", c.Index, c.Process.commandLine())
		}
		_, err := fmt.Fprintln(w)
		return err
	}
	fmt.Fprintln(w, "\nchildren (repetition 1; JSON is a temporary file):")
	for _, c := range cs {
		args := c.childArgs(o, 1, "JSON")
		fmt.Fprintf(w, "  #%d  %s %s\n", c.Index, filepath.Base(exe), strings.Join(args, " "))
	}
	_, err := fmt.Fprintln(w)
	return err
}

func sweepString(m map[string]string) string {
	if len(m) == 0 {
		return "-"
	}
	var parts []string
	for _, axis := range []string{AxisThreads, AxisCacheScale, AxisDecode, AxisBatchAlloc} {
		if v, ok := m[axis]; ok {
			parts = append(parts, axis+"="+v)
		}
	}
	return strings.Join(parts, " ")
}
