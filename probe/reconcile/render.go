package reconcile

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"memprobe/probe/ledger"
	"memprobe/probe/procfs"
	"memprobe/probe/rtstats"
)

// Render writes r as two plain-text tables, resident then virtual, with
// bytes, MiB and share columns, followed by any warnings.
func Render(w io.Writer, r Reconciliation) error {
	// Right-align numbers by padding them to a common width; tabwriter
	// aligns the columns.
	var nums []string
	rows := append(append(append([]Part{}, r.Parts...), r.Virtual...),
		Part{Bytes: r.UnexplainedBytes}, Part{Bytes: r.RSSBytes}, Part{Bytes: r.VSZBytes})
	wb, wm := len("BYTES"), len("MiB")
	for _, p := range rows {
		nums = append(nums, strconv.FormatInt(p.Bytes, 10))
		wb = max(wb, len(nums[len(nums)-1]))
		wm = max(wm, len(mib(p.Bytes)))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(name string, b int64, total int64, note string) {
		fmt.Fprintf(tw, "%s\t%*d\t%*s\t%6s\t%s\n", name, wb, b, wm, mib(b), pct(b, total), note)
	}
	fmt.Fprintf(tw, "RESIDENT\t%*s\t%*s\t%6s\tNOTE\n", wb, "BYTES", wm, "MiB", "%RSS")
	for _, p := range r.Parts {
		row(p.Name, p.Bytes, r.RSSBytes, p.Note)
	}
	row("unexplained", r.UnexplainedBytes, r.RSSBytes, r.UnexplainedNote)
	pss := ""
	if r.PSSBytes != 0 {
		pss = fmt.Sprintf("VmRSS; PSS %d B (%s MiB)", r.PSSBytes, mib(r.PSSBytes))
	} else {
		pss = "VmRSS"
	}
	row("= rss", r.RSSBytes, r.RSSBytes, pss)
	fmt.Fprintln(tw)
	fmt.Fprintf(tw, "VIRTUAL\t%*s\t%*s\t%6s\tNOTE\n", wb, "BYTES", wm, "MiB", "%VSZ")
	for _, p := range r.Virtual {
		row(p.Name, p.Bytes, r.VSZBytes, p.Note)
	}
	row("= vsz", r.VSZBytes, r.VSZBytes, "VmSize")
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, s := range r.Warnings {
		if _, err := fmt.Fprintf(w, "warning: %s\n", s); err != nil {
			return err
		}
	}
	return nil
}

func mib(b int64) string { return strconv.FormatFloat(float64(b)/(1<<20), 'f', 2, 64) }

func pct(b, total int64) string {
	if total == 0 {
		return "-"
	}
	return strconv.FormatFloat(100*float64(b)/float64(total), 'f', 1, 64)
}

// GatherSelf reads the calling process: status (and smaps_rollup if
// withSmaps) from /proc/self, the runtime through rt, and the ledger l
// (nil is an empty ledger). Linux only. Set Cgo, OutsideGoComponents and
// the thread stack figures on the result before Compute.
func GatherSelf(rt *rtstats.Reader, l *ledger.Ledger, withSmaps bool) (Input, error) {
	var in Input
	rt.Read(&in.Runtime)
	in.Ledger = l.Snapshot()
	for _, e := range in.Ledger {
		in.LedgerTotalBytes += e.CurrentBytes
	}
	st, err := procfs.ReadStatus(procfs.Self)
	if err != nil {
		return Input{}, fmt.Errorf("reconciling: %w", err)
	}
	in.Status = st
	in.Runtime.OSThreads = int64(st.Threads)
	if withSmaps {
		sm, err := procfs.ReadSmapsRollup(procfs.Self)
		if err != nil {
			return Input{}, fmt.Errorf("reconciling: %w", err)
		}
		in.Smaps = &sm
	}
	return in, nil
}
