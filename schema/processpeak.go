package schema

// The judgments about a process result that its watcher (outside) and
// its report (report/process) both make: which samples saw the process
// alive, and whether wait4's maxrss is the probe's own image. Pure
// functions of the result, so that the two cannot disagree.

// AliveTimeline is the timeline without the points sampled after the
// process died (a zombie's statm reads 0 before it is reaped).
func (r *SamplerResult) AliveTimeline() []SamplerPoint {
	pts := r.Timeline
	n := len(pts)
	for n > 0 && pts[n-1].VSZBytes == 0 {
		n--
	}
	return pts[:n]
}

// AliveSamples counts the samples of the timeline's points taken while
// the process lived.
func (r *SamplerResult) AliveSamples() int {
	n := 0
	for _, p := range r.AliveTimeline() {
		n += max(p.Samples, 1)
	}
	return n
}

// Endpoints are the run's first and last samples as taken (First and
// Last), or, in a result that lacks them, the first and last of the
// alive points pts: maxima of their buckets once the timeline merged (a
// program that freed 100 MiB just before it ended kept it as final).
func (r *SamplerResult) Endpoints(pts []SamplerPoint) (first, last SamplerPoint) {
	first, last = pts[0], pts[len(pts)-1]
	if r.First != nil && r.Last != nil {
		first, last = *r.First, *r.Last
	}
	return first, last
}

// ReleasedBy finds in the timeline when RSS came down from its peak,
// halfway to where it ended (releasedByMs, -1 if it did not come down),
// and when the last sample of the living process was taken (endMs, 0
// without one).
func (r *SamplerResult) ReleasedBy() (releasedByMs, endMs float64) {
	pts := r.AliveTimeline()
	if len(pts) == 0 {
		return -1, 0
	}
	peak := 0
	for i, p := range pts {
		if p.RSSBytes > pts[peak].RSSBytes {
			peak = i
		}
	}
	_, final := r.Endpoints(pts)
	half := final.RSSBytes + (pts[peak].RSSBytes-final.RSSBytes)/2
	for _, p := range pts[peak+1:] {
		if p.RSSBytes <= half && p.RSSBytes < pts[peak].RSSBytes {
			return p.TMs, final.TMs
		}
	}
	// Released within the last bucket, whose maximum still holds the
	// peak: the last sample says so.
	if final.RSSBytes <= half && final.RSSBytes < pts[peak].RSSBytes {
		return final.TMs, final.TMs
	}
	return -1, final.TMs
}

// Undersampled says whether the timeline saw the process fewer than
// twice (n samples while it lived) and no walk was taken: its one sample
// (at the start, for exec: the program as execve left it, before it
// ran) is no peak. n < 0: unknown.
func (p *Process) Undersampled(n int) bool {
	return n >= 0 && n < 2 && p.Walks == 0
}

// ForkImage says whether wait4's maxrss is the probe's own image at the
// start rather than the program's: no more than 1 % above the probe's
// VmHWM then, and above what the program was seen to hold.
func (p *Process) ForkImage() bool {
	return p.ProbeVmHWMAtStartBytes > 0 && p.RusageMaxRSSBytes > p.VmHWMBytes &&
		float64(p.RusageMaxRSSBytes) <= 1.01*float64(p.ProbeVmHWMAtStartBytes)
}

// Sources of Process.RusageSource.
const (
	// RusageWait4: wait4's rusage at exit (exec).
	RusageWait4 = "wait4"
	// RusageProc: /proc/PID/stat and its threads' status (attach).
	RusageProc = "proc"
)
