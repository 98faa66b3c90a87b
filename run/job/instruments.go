package job

import (
	"context"
	"math"
	"unsafe"

	"memprobe/instrument/allocsite"
	"memprobe/instrument/procfs"
	"memprobe/instrument/reconcile"
	"memprobe/instrument/rtstats"
	"memprobe/instrument/sampler"
	"memprobe/ledger"
	"memprobe/schema"
	"memprobe/trainer/osthread"
)

// MaxStepRows bounds schema.Runtime.Steps: per-step counters are kept for the
// first MaxStepRows steps; the aggregates cover every step.
const MaxStepRows = 1000

// instruments are the per-job probes: runtime counters around every step,
// the sampler, and the RSS reconciliation. A nil *instruments does nothing.
type instruments struct {
	led    *ledger.Ledger
	rt     *rtstats.Reader
	smp    *sampler.Sampler
	status *procfs.StatusReader
	st     procfs.Status
	gpu    bool // device buffers are on a GPU, not in host memory

	warmup  int
	before  rtstats.Snapshot
	after   rtstats.Snapshot
	out     schema.Runtime
	steady  rtstats.SteadyState
	nSteady int

	// sites attributes the steady-state steps' allocations by site; it
	// starts when the warm-up ends. keepRate leaves MemProfileRate to a
	// profile session that writes heap profiles.
	sites       *allocsite.Window
	sitesReport *allocsite.Report
	keepRate    bool

	heapAddrs []uintptr // addresses of Go heap objects, to find the arenas in smaps
	small     *[64]byte
	// probeHeap is the Go heap the probe's own packages and libraries
	// hold, measured before the trainer is built: probe.heap in the
	// reconciliation.
	probeHeap reconcile.ProbeHeap

	stopped bool
	// sampled is the sampler's result once stopSampling has stopped it.
	sampled *sampled

	peakRSS  uint64
	peakStep int
	peakRec  reconcile.Reconciliation // computed where it was gathered: pagemap is read then
	peakOK   bool
}

func startInstruments(ctx context.Context, o *Options) (*instruments, error) {
	if o.NoInstruments {
		return nil, nil
	}
	p := o.Profiling
	in := &instruments{led: o.Trainer.Ledger, rt: rtstats.New(),
		gpu:      o.Trainer.Device != "" && o.Trainer.Device != "cpu",
		keepRate: p.Heap != "" || p.Allocs != "" || p.Dir != "" || p.MemProfileRate > 0}
	in.out.Steps = make([]schema.StepCounters, 0, min(o.Steps, MaxStepRows))
	in.probeHeap = reconcile.MeasureProbeHeap("at job start, before the trainer was built")
	smp, err := sampler.New(sampler.Options{Interval: o.SampleInterval, MaxPoints: o.SampleMaxPoints})
	if err != nil {
		return nil, err
	}
	if err := smp.Start(ctx); err != nil {
		return nil, err
	}
	in.smp = smp
	// The step hooks read VmRSS and the thread count without allocating.
	if st, err := (procfs.FS{}).OpenStatus(procfs.Self); err == nil {
		in.status = st
	}
	return in, nil
}

// setUp is called after the trainer is built, before the first step.
func (in *instruments) setUp(warmup int) {
	if in == nil {
		return
	}
	in.warmup = warmup
	in.rt.Read(&in.out.Start)
	in.readStatus()
	in.out.Start.OSThreads = int64(in.st.Threads)
	in.notePeak(0)
	if warmup == 0 {
		in.beginSites()
	}
}

// endSites ends the attribution by site right after the last step, before
// the job builds its result.
func (in *instruments) endSites() {
	if in == nil || in.sites == nil {
		return
	}
	rep := in.sites.End(in.nSteady)
	in.sites, in.sitesReport = nil, &rep
}

// ownPrefixes are the probe's packages: what they allocate is the
// instruments' own work (sampler, reconciliation, progress, JSON).
var ownPrefixes = []string{"memprobe/run/", "memprobe/instrument/", "memprobe/outside/", "memprobe/cmd/", "memprobe/internal/table."}

// walkPrefixes are the probe's walks of the process (the reconciliation
// at a new peak, which may fall in the steady window).
var walkPrefixes = []string{"memprobe/instrument/reconcile."}

// allocHelpers allocate for their caller: a buffer the trainer makes
// through the ledger is the trainer's, at the line that asked for it.
var allocHelpers = []string{"memprobe/ledger."}

// beginSites starts attributing allocations by site: when the warm-up
// ends, between two steps (it runs a GC).
func (in *instruments) beginSites() {
	in.sites = allocsite.Begin(allocsite.Options{OwnPrefixes: ownPrefixes, Helpers: allocHelpers, Walks: walkPrefixes, KeepRate: in.keepRate})
}

func (in *instruments) readStatus() {
	if in.status != nil {
		in.status.Read(&in.st)
	}
}

// beforeStep is the last thing before the trainer's Step.
func (in *instruments) beforeStep() {
	if in == nil {
		return
	}
	in.rt.Read(&in.before)
}

// afterStep is the first thing after the trainer's Step; it allocates
// nothing until the peak check below, which runs only when RSS grew.
func (in *instruments) afterStep(step, k int) {
	if in == nil {
		return
	}
	in.rt.Read(&in.after)
	d := rtstats.Delta(in.before, in.after)
	in.readStatus()
	sc := schema.StepCounters{
		Step: step, AllocsObjects: d.HeapAllocsObjects, AllocsBytes: d.HeapAllocsBytes,
		GCCycles: d.GCCycles, GCPauseNs: d.GCPauseTotalNs,
		HeapLiveBytes: in.after.HeapLiveBytes, Goroutines: in.after.Goroutines, RuntimeThreads: in.after.RuntimeThreads,
		OSThreads: int64(in.st.Threads), RSSBytes: int64(in.st.VmRSSBytes),
	}
	o := &in.out
	if len(o.Steps) < cap(o.Steps) {
		o.Steps = append(o.Steps, sc)
	} else {
		o.StepsTruncated = true
	}
	o.AllStepsAllocsObjects += sc.AllocsObjects
	o.AllStepsAllocsBytes += sc.AllocsBytes
	o.AllStepsGCCycles += sc.GCCycles
	o.AllStepsGCPauseNs += sc.GCPauseNs
	if k > in.warmup { // k is 1-based within this run
		s := &in.steady
		if in.nSteady == 0 || sc.AllocsObjects < s.MinStepAllocsObjects {
			s.MinStepAllocsObjects = sc.AllocsObjects
		}
		if in.nSteady == 0 || sc.AllocsObjects > s.MaxStepAllocsObjects {
			s.MaxStepAllocsObjects = sc.AllocsObjects
		}
		in.nSteady++
		s.AllocsPerStepObjects += float64(sc.AllocsObjects)
		s.AllocsPerStepBytes += float64(sc.AllocsBytes)
		s.GCCycles += sc.GCCycles
		s.GCPauseTotalNs += sc.GCPauseNs
	}
	p := &o.Peak
	m := in.after.Memory
	p.HeapLiveBytes = max(p.HeapLiveBytes, in.after.HeapLiveBytes)
	p.HeapObjectsBytes = max(p.HeapObjectsBytes, m.HeapObjectsBytes)
	p.GoMappedBytes = max(p.GoMappedBytes, m.TotalBytes-m.HeapReleasedBytes)
	p.Goroutines = max(p.Goroutines, in.after.Goroutines)
	p.RuntimeThreads = max(p.RuntimeThreads, in.after.RuntimeThreads)
	p.OSThreads = max(p.OSThreads, int64(in.st.Threads))
	in.notePeak(step)
	if k == in.warmup {
		in.beginSites()
	}
}

// notePeak reconciles the resident set when VmRSS is above every earlier
// boundary's by peakMargin. It allocates, walks the page tables (smaps)
// and reads the threads' stack pointers and pagemap, but only at a new
// high, outside the step's counters; the margin keeps RSS that creeps up
// by a few pages a step from costing a walk every step.
func (in *instruments) notePeak(step int) {
	if in.status == nil || in.st.VmRSSBytes <= in.peakRSS+peakMargin(in.peakRSS) {
		return
	}
	rec, err := in.reconcile()
	if err != nil {
		return
	}
	in.peakRSS, in.peakStep, in.peakRec, in.peakOK = in.st.VmRSSBytes, step, rec, true
}

// reconcile gathers the process's state and computes the reconciliation at
// once (Compute reads pagemap: it must see the moment smaps saw).
func (in *instruments) reconcile() (reconcile.Reconciliation, error) {
	g, err := reconcile.GatherSelf(in.rt, in.led, true)
	if err != nil {
		return reconcile.Reconciliation{}, err
	}
	return reconcile.Compute(in.prepare(g)), nil
}

// finishSteps ends the step measurements: the end snapshot, steady state
// and the reconciliations. Without /proc (not Linux) the reconciliation is
// left nil.
func (in *instruments) finishSteps(r *schema.Result) {
	if in == nil {
		return
	}
	in.rt.Read(&in.out.End)
	in.readStatus()
	in.out.End.OSThreads = int64(in.st.Threads)
	s := in.steady
	s.Steps, s.WarmupSteps = in.nSteady, in.warmup
	if in.nSteady > 0 {
		s.AllocsPerStepObjects /= float64(in.nSteady)
		s.AllocsPerStepBytes /= float64(in.nSteady)
	}
	in.out.Steady = s
	out := in.out
	r.Runtime = &out
	r.AllocsBySite = in.sitesReport

	end, err := in.reconcile()
	if err != nil {
		return
	}
	if !in.peakOK || uint64(end.RSSBytes) > in.peakRSS+peakMargin(in.peakRSS) {
		in.peakRec, in.peakStep, in.peakOK = end, r.StartStep+r.Steps, true
	}
	hwm := int64(in.st.VmHWMBytes)
	if st, err := procfs.ReadStatus(procfs.Self); err == nil {
		hwm = int64(st.VmHWMBytes)
	}
	rec := &schema.RSSReconciliation{
		End:        end,
		AtPeak:     in.peakRec,
		AtPeakStep: in.peakStep,
		VmHWMBytes: hwm,
		Residual:   in.peakRec.UnexplainedMappings,

		GoArenaRSSBytes:          end.GoArenaRSSBytes,
		ThreadStackReservedBytes: in.peakRec.ThreadStackReservedBytes,
		ThreadStackResidentBytes: in.peakRec.ThreadStackResidentBytes,
	}
	rec.ExplainedBytes = explained(rec.AtPeak)
	rec.ResidualBytes = rec.VmHWMBytes - rec.ExplainedBytes
	if rec.VmHWMBytes > 0 {
		rec.ResidualPct = round3(100 * float64(rec.ResidualBytes) / float64(rec.VmHWMBytes))
	}
	rec.Within10Pct = math.Abs(rec.ResidualPct) <= 10
	r.RSSReconciliation = rec
}

// prepare sets what Compute needs beyond GatherSelf: the addresses of the
// trainer's buffers (in Go's arenas), the stacks of the worker threads
// (trainer/osthread records each one's range) and glibc's default stack
// size, and the probe's own heap (probe.heap). It leaves out of the
// ledger what is not resident host memory:
// worker.stacks counts pthread stack reservations (address space; their
// resident pages are measured as stacks.workers), and device.buffers on a
// CUDA device live in GPU memory. Every other component, device.buffers on
// the cpu device included, is in the Go heap.
func (in *instruments) prepare(g reconcile.Input) reconcile.Input {
	for _, a := range in.heapAddrs {
		g.GoAddrs = append(g.GoAddrs, uint64(a))
	}
	g.ProbeHeap = &in.probeHeap
	osthread.EachStack(func(s osthread.Stack) {
		g.ThreadStacks = append(g.ThreadStacks, reconcile.StackRange{Lo: uint64(s.Lo), Hi: uint64(s.Hi), GuardBytes: s.GuardBytes})
	})
	if d := osthread.DefaultStackBytes(); d > 0 {
		g.ThreadStackBytes = d
	}
	g.OutsideGoComponents = []string{}
	kept := make([]ledger.Entry, 0, len(g.Ledger))
	g.LedgerTotalBytes = 0
	for _, e := range g.Ledger {
		if e.Component == ledger.WorkerStacks || e.Component == ledger.DeviceBuffers && in.gpu {
			continue
		}
		kept = append(kept, e)
		g.LedgerTotalBytes += e.CurrentBytes
	}
	g.Ledger = kept
	return g
}

// explained sums the resident bytes of rec's parts: every part comes from
// a measurement of its own, so this is rec's RSS less its unexplained.
func explained(rec reconcile.Reconciliation) int64 {
	var b int64
	for _, p := range rec.Parts {
		b += p.Bytes
	}
	return b
}

// stop ends the sampler and compares its peak with the kernel's VmHWM.
func (in *instruments) stop(r *schema.Result) {
	if in == nil || in.stopped {
		return
	}
	in.stopSampling()
	in.stopped = true
	if in.status != nil {
		in.status.Close()
	}
	res, err := in.sampled.res, in.sampled.err
	if err != nil {
		return
	}
	r.Sampler = &res
	if r.PeakRSSBytes > 0 {
		r.RSSAgreement = &schema.RSSAgreement{
			SamplerPeakRSSBytes: res.Peaks.RSSBytes,
			VmHWMBytes:          r.PeakRSSBytes,
			DiffPct:             round3(100 * (float64(res.Peaks.RSSBytes) - float64(r.PeakRSSBytes)) / float64(r.PeakRSSBytes)),
		}
	}
}

// sampled is what the sampler measured, kept between stopSampling and
// stop.
type sampled struct {
	res sampler.Result
	err error
}

// stopSampling takes the sampler's last sample and stops it. The job calls
// it before reading its VmHWM, so that the high-water mark read covers
// every sample and the sampler's peak can only be lower (RSSAgreement);
// read first, a last sample above it made diff_pct positive.
func (in *instruments) stopSampling() {
	if in == nil || in.stopped || in.sampled != nil {
		return
	}
	res, err := in.smp.Stop()
	in.sampled = &sampled{res, err}
}

// abort stops the sampler on an error path.
func (in *instruments) abort() {
	if in == nil || in.stopped {
		return
	}
	in.stopped = true
	if in.sites != nil {
		in.sites.End(0) // restores MemProfileRate
		in.sites = nil
	}
	if in.sampled == nil {
		in.smp.Stop()
	}
	if in.status != nil {
		in.status.Close()
	}
}

// peakMargin is how far RSS must rise above the last gathered peak before
// the next gather: 1 MiB or 0.5 %, whichever is more (0 before the first).
func peakMargin(peak uint64) uint64 {
	if peak == 0 {
		return 0
	}
	return max(1<<20, peak/200)
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// rss is VmRSS as last read at a step boundary, or read now when the
// instruments are off.
func (in *instruments) rss() uint64 {
	if in == nil || in.status == nil {
		st, _ := procfs.ReadStatus(procfs.Self)
		return st.VmRSSBytes
	}
	return in.st.VmRSSBytes
}

// noteHeap records addresses of Go heap objects (the trainer's big
// buffers, and a small object of its own) so that the reconciliation can
// find Go's heap arenas among the mappings.
func (in *instruments) noteHeap(ptrs ...unsafe.Pointer) {
	if in == nil {
		return
	}
	in.small = new([64]byte) // escapes: a small-object span in the heap
	in.heapAddrs = append(in.heapAddrs, uintptr(unsafe.Pointer(in.small)))
	for _, p := range ptrs {
		in.heapAddrs = append(in.heapAddrs, uintptr(p))
	}
}
