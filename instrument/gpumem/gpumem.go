// Package gpumem reads the process's GPU memory as NVML sees it, once or
// over time: the GPU counterpart of the RSS sampler in instrument/sampler. It
// opens libnvidia-ml.so.1 at run time and calls the eight NVML functions
// it needs, and two optional ones for utilization, through internal/dl
// (dlopen and a cgo trampoline), so building needs a C compiler for cgo
// but no NVIDIA header, toolkit or driver, and on a machine without the
// driver Open fails with a one-line error ("no NVML: libnvidia-ml.so.1
// not found: ...") that the caller can print and carry on. A binary built
// with CGO_ENABLED=0 still compiles, but its Open says "NVML needs a cgo
// build".
//
// Why not NVIDIA's github.com/NVIDIA/go-nvml, the official binding (this
// package used it first): it links every program that imports it with
// --export-dynamic and --unresolved-symbols=ignore-in-object-files, which
// made every probe child 1.1 MiB larger at start (probe version: 15.7
// MiB maxrss against 14.5 without it, AMD EPYC) and would hide any
// unresolved C symbol of the whole program at link time; the ten calls
// used here do not need its 14,000-line header.
//
// # What the figure is
//
// ProcessBytes is what NVML charges to a process in its compute-process
// list (nvmlDeviceGetComputeRunningProcesses, usedGpuMemory), summed over
// every GPU. That is the device memory the driver has mapped for the
// process, not what the program asked for: it includes the CUDA context
// itself (a few hundred MiB on recent GPUs: kernel images of every loaded
// module, the local-memory reservation for the device's threads, the
// printf and malloc heaps), the workspaces that libraries such as cuBLAS
// and cuDNN allocate on first use, and the slack of any caching allocator.
// It is therefore larger than the sum of the program's cuMemAlloc calls,
// and the difference is a cost of running on the GPU, not a leak. The
// figure is sampled from outside the allocator, so a short spike between
// two samples can be missed: PeakBytes is a lower bound on the true peak.
//
// # When NVML has no figure
//
// NVML lists processes by the PID that the driver sees, which is the PID
// in the host's namespace. In a container with its own PID namespace the
// list holds host PIDs that match nothing in the container, and on some
// drivers and container runtimes it is empty for processes outside the
// caller's namespace. A process that has not created a CUDA context yet is
// not listed either. From inside the process these cases cannot be told
// apart, so this package does not guess: whenever no entry with a figure
// carries pid, on any GPU, ProcessBytes returns 0 with an error wrapping
// ErrNoProcessEntry (whose text says how many other processes were
// listed, the hint for the namespace case), never a silent 0. A caller
// that knows the process holds a CUDA context should report the GPU
// figure as "not available", not as zero. The Sampler counts such samples
// apart from errors (Timeline.NoEntry) and Timeline.Available says whether
// any figure was seen at all.
//
// # What the utilization figure is
//
// Utilization and Sample.GPUUtilPct come from
// nvmlDeviceGetUtilizationRates: the percent of NVML's own sample period
// (1/6 s to 1 s depending on the product, set by the driver and not
// aligned with the Sampler's interval) during which one or more kernels
// ran on the GPU. It is device-wide: every process's kernels count, not
// only the sampled process's, so on a shared GPU it says how busy the card
// was, not how busy this process kept it. Nor is it occupancy: one small
// kernel running all the time reads 100% however few of the GPU's
// multiprocessors it uses. (The memory figure Utilization also returns is
// likewise the share of the period during which device memory was read or
// written, not a bandwidth and not the memory held.)
//
// A Sample carries the mean of that figure over the GPUs on which NVML
// charges the process memory at that reading and which report it, and
// Timeline.MeanGPUUtilPct is the mean over the samples that have one: a
// mean of samples, not of time, so a reading that was late or failed
// weighs nothing, and with an interval shorter than NVML's period
// neighbouring samples may repeat one window. A GPU that reports no
// utilization (a MIG instance, some products: ErrUtilizationNotSupported)
// is counted in Timeline.UtilErrors, apart from Errors: it leaves the
// memory figures as good as they were.
//
// # What the process's own utilization is
//
// ProcessUtilization, Sample.ProcessSMUtilPct and ProcessMemUtilPct come
// from nvmlDeviceGetProcessUtilization. For each of its sample periods the
// driver keeps one sample per process that had some non-zero utilization
// in it, stamped with the CPU time in microseconds: smUtil, the percent of
// the period during which the SMs ran that process's kernels, and memUtil,
// the percent during which its work read or wrote device memory. On a GPU
// that several processes share (time-sliced, or MPS) this is the watched
// process's share alone, where the device-wide figure is everyone's. It is
// still time, not occupancy: one small kernel that runs throughout reads
// 100 % however few multiprocessors it uses.
//
// Each reading asks every GPU on which NVML charges the process memory
// for the samples stamped after the newest it has seen there
// (lastSeenTimeStamp, one per GPU), so that each sample is counted once.
// The first is the Sampler's start in Unix microseconds, so that samples
// from before the watch are not counted. That takes nvml.h's "CPU
// timestamp" to be the wall clock time.Now reads, as the call's users do
// (not checked on a GPU here): a driver stamping from a clock behind it
// would leave the figure absent, every reply empty, rather than wrong. A GPU's
// reply says one of three things:
//
//   - samples of the pid: the figure is their mean;
//   - samples of other processes only: the pid had no sample in periods
//     that the driver did record, and as it records only processes with
//     some non-zero utilization, its utilization there was 0 %;
//   - no sample at all (NVML_ERROR_NOT_FOUND): no period ended since the
//     last reading (NVML's period, 1/6 s to 1 s, is longer than
//     DefaultInterval, so many readings are like this), or no process at
//     all was busy in those that did. The pid's figure is unknown, not 0:
//     the sample carries none for that GPU, and a sample for which no GPU
//     gave one is counted in Timeline.ProcessUtilNoSample.
//
// A Sample's figure is the mean over its GPUs that gave one (nil when
// none did), and Timeline.MeanProcessSMUtilPct the mean over the Samples
// that have one: a mean of readings, as the device-wide one is. Within a
// reply, periods in which only other processes have a sample are not
// counted as zeros for the pid beside its own samples (the samples of two
// processes need not share a timestamp), so a reading over several
// periods of a process busy in bursts reads high. A GPU without the
// figure (nvml.h: not supported on MIG-enabled GPUs; some products) or a
// driver without the entry point (ErrProcessUtilizationNotSupported), or
// any other failure, is counted in Timeline.ProcessUtilErrors, apart from
// Errors and UtilErrors.
//
// # Concurrency
//
// Every NVML call of the process goes through one mutex (the calls are
// few). An NVML and its Samplers may be used from any goroutine.
package gpumem

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// EnvLibNVML names the variable that points Open at a particular
// libnvidia-ml file when its caller passes "": a driver installed outside
// the loader's search path, or a test's stand-in library.
const EnvLibNVML = "MEMPROBE_LIBNVML"

// DefaultLibrary is the soname NVML is loaded by when neither the caller
// nor EnvLibNVML names a file. It is the name the driver installs (the
// unversioned libnvidia-ml.so comes only with development packages).
const DefaultLibrary = "libnvidia-ml.so.1"

// DefaultInterval is the sampling interval used when Sample is given a
// non-positive one. One sample is one NVML process query per GPU, and a
// utilization query per GPU the process holds memory on, tens of
// microseconds to about a millisecond, so 100 ms costs the measured
// process well under 1% while still catching allocations that live for a
// few batches.
const DefaultInterval = 100 * time.Millisecond

// ErrNoLibrary is wrapped by Open's error when libnvidia-ml cannot be
// loaded, so callers can tell "no NVML on this machine" (print it, carry
// on without GPU figures) from NVML failing on a machine that has it.
// The wrapped error's text adds the dlopen reason after a colon.
var ErrNoLibrary = errors.New("no NVML: " + DefaultLibrary + " not found")

// ErrNoCgo is what Open returns in a binary built without cgo, which
// loading a library needs. It starts "no NVML:" like ErrNoLibrary so that callers
// that print either get the same one-line shape.
var ErrNoCgo = errors.New("no NVML: NVML needs a cgo build (this binary was built with CGO_ENABLED=0)")

// ErrNoProcessEntry is wrapped by ProcessBytes's error when no GPU's
// compute-process list gives a figure for the pid: it is not listed, or it
// is listed with NVML_VALUE_NOT_AVAILABLE instead of a size. The process
// may have no CUDA context yet, or NVML may list it under a PID from
// another namespace (see the package doc); the wrapping text says how
// many other processes were listed. Callers should report "not available"
// rather than a zero.
var ErrNoProcessEntry = errors.New("NVML lists no memory figure for the process")

// ErrUtilizationNotSupported is wrapped by Utilization's error when NVML
// has no utilization for the GPU (NVML_ERROR_NOT_SUPPORTED: MIG instances
// and some products) or the library lacks nvmlDeviceGetUtilizationRates,
// so a caller can leave the figure out without treating it as a failure.
var ErrUtilizationNotSupported = errors.New("GPU utilization not supported")

// ErrProcessUtilizationNotSupported is wrapped by ProcessUtilization's
// error when NVML has no per-process utilization for the GPU
// (NVML_ERROR_NOT_SUPPORTED: MIG-enabled GPUs, some products) or the
// library lacks nvmlDeviceGetProcessUtilization, so a caller can leave the
// figure out without treating it as a failure.
var ErrProcessUtilizationNotSupported = errors.New("per-process GPU utilization not supported")

// errClosed is returned by calls on an NVML after Close (or on a nil one).
var errClosed = errors.New("gpumem: NVML is closed")

// Device describes one GPU as NVML reports it, so that a record of a run
// says which card it ran on and how full the card was, other processes
// included.
type Device struct {
	// Index is NVML's index of the device (nvmlDeviceGetHandleByIndex),
	// which need not match CUDA's device ordinal unless
	// CUDA_DEVICE_ORDER=PCI_BUS_ID.
	Index int `json:"index"`
	// Name is the product name, e.g. "NVIDIA H100 80GB HBM3".
	Name string `json:"name"`
	// TotalBytes, UsedBytes and FreeBytes come from
	// nvmlDeviceGetMemoryInfo: the card's memory, what every process
	// (plus the driver's own reservation) holds of it, and the rest.
	// NVML's total is the physical memory, while CUDA's (cuMemGetInfo,
	// cuDeviceTotalMem) leaves out the driver's reservation, some hundreds
	// of MiB less; the free figures agree. So compare with CUDA's figures
	// through FreeBytes, never through TotalBytes or UsedBytes.
	TotalBytes uint64 `json:"total_bytes"`
	UsedBytes  uint64 `json:"used_bytes"`
	FreeBytes  uint64 `json:"free_bytes"`
}

// libPathOrDefault resolves Open's libPath argument: the caller's path,
// else EnvLibNVML, else DefaultLibrary.
func libPathOrDefault(libPath string) string {
	if libPath != "" {
		return libPath
	}
	if p := os.Getenv(EnvLibNVML); p != "" {
		return p
	}
	return DefaultLibrary
}

// ProcessBytes is the device memory NVML charges to pid, summed over every
// GPU: the figure to set beside the process's RSS. When NVML gives no
// figure for pid on any GPU it returns 0 and an error wrapping
// ErrNoProcessEntry; other errors name the NVML call that failed.
func (n *NVML) ProcessBytes(pid int) (int64, error) {
	per, err := n.ProcessBytesPerDevice(pid)
	if err != nil {
		return 0, err
	}
	var sum int64
	for _, b := range per {
		sum += b
	}
	return sum, nil
}

// ProcessUtil is what one ProcessUtilization reading says of a process on
// one GPU: NVML's samples stamped after the since it was given.
type ProcessUtil struct {
	// Samples is how many of the samples are the process's, and Others
	// how many are other processes'.
	Samples, Others int
	// SMPct and MemPct are the means of the process's samples' smUtil and
	// memUtil, in percent; 0 when Samples is 0.
	SMPct, MemPct float64
	// LastSeen is the newest timestamp among the samples (NVML's CPU
	// time, microseconds), or the since given when there was none: the
	// since of the next reading of the GPU.
	LastSeen uint64
}

// Known reports whether the reading gives the process a figure: samples of
// its own, or, without any, samples of other processes, which mean that
// the driver recorded periods in which the process had no non-zero
// utilization (its figure is then 0). With no sample at all the figure is
// unknown (see the package doc).
func (u ProcessUtil) Known() bool { return u.Samples > 0 || u.Others > 0 }

// Sample is one reading of ProcessBytes.
type Sample struct {
	// Seconds is the time of the reading since Sample was called.
	Seconds float64 `json:"t_seconds"`
	// Bytes is ProcessBytes at that time.
	Bytes int64 `json:"bytes"`
	// GPUUtilPct is the GPU utilization (Utilization's gpuPct, device-wide:
	// see the package doc) read just after Bytes, the mean over the GPUs
	// on which the process holds memory; GPUs that give none are left out
	// of the mean, and it is nil when none gave one.
	GPUUtilPct *float64 `json:"gpu_util_pct,omitempty"`
	// ProcessSMUtilPct and ProcessMemUtilPct are the process's own SM and
	// memory utilization (ProcessUtilization, see the package doc) in the
	// NVML samples stamped since the previous reading, the mean over the
	// GPUs on which it holds memory and which gave one; nil when none did
	// (no new NVML sample, or no support), never a 0 that was not read.
	ProcessSMUtilPct  *float64 `json:"process_sm_util_pct,omitempty"`
	ProcessMemUtilPct *float64 `json:"process_mem_util_pct,omitempty"`
}

// Timeline is what a Sampler saw, in a shape that goes into a JSON record
// as it is.
type Timeline struct {
	// PID is the process sampled.
	PID int `json:"pid"`
	// IntervalSeconds is the interval asked for.
	IntervalSeconds float64 `json:"interval_seconds"`
	// Samples are the readings that gave a figure, in time order. Readings
	// without one (NoEntry, Errors) are left out rather than recorded as
	// zero, so a plot shows a gap, not a false drop. Never nil.
	Samples []Sample `json:"samples"`
	// PeakBytes is the largest Bytes in Samples (0 if none): a lower bound
	// on the true peak, since a spike between samples goes unseen.
	PeakBytes int64 `json:"peak_bytes"`
	// NoEntry counts readings for which NVML listed no figure for the pid
	// (ErrNoProcessEntry), and NoEntryReason is the last such error's
	// text. They are kept apart from Errors because before the process
	// creates its CUDA context they are expected, and in a PID namespace
	// NVML cannot see into they are all there is.
	NoEntry       int    `json:"no_entry_samples"`
	NoEntryReason string `json:"no_entry_reason,omitempty"`
	// Errors counts readings that failed for any other reason, and
	// FirstErr is the first one's text: usually one cause repeated, and
	// the first is the one that explains the rest.
	Errors   int    `json:"errors"`
	FirstErr string `json:"first_error,omitempty"`
	// MeanGPUUtilPct is the mean of the Samples' GPUUtilPct, over those
	// that have one (nil if none): a mean of samples, not of time.
	MeanGPUUtilPct *float64 `json:"mean_gpu_util_pct,omitempty"`
	// UtilErrors counts the Samples for which a GPU the process holds
	// memory on gave no utilization (ErrUtilizationNotSupported on a MIG
	// instance, or any other failure), and UtilFirstErr is the first
	// one's text. They are kept apart from Errors: the memory figure of
	// those samples is as good as any other.
	UtilErrors   int    `json:"util_errors"`
	UtilFirstErr string `json:"util_first_error,omitempty"`
	// MeanProcessSMUtilPct and MeanProcessMemUtilPct are the means of the
	// Samples' ProcessSMUtilPct and ProcessMemUtilPct, over those that
	// have one (nil if none): the process's own utilization, where
	// MeanGPUUtilPct is the device's.
	MeanProcessSMUtilPct  *float64 `json:"mean_process_sm_util_pct,omitempty"`
	MeanProcessMemUtilPct *float64 `json:"mean_process_mem_util_pct,omitempty"`
	// ProcessUtilNoSample counts the Samples without a per-process figure
	// because NVML had no new sample on any of their GPUs (not an error:
	// NVML's period is longer than the interval, or every process was
	// idle). ProcessUtilErrors counts the Samples for which a GPU the
	// process holds memory on failed to give one
	// (ErrProcessUtilizationNotSupported, or any other failure), and
	// ProcessUtilFirstErr is the first one's text.
	ProcessUtilNoSample int    `json:"process_util_no_sample"`
	ProcessUtilErrors   int    `json:"process_util_errors"`
	ProcessUtilFirstErr string `json:"process_util_first_error,omitempty"`
}

// Available reports whether NVML gave any figure for the process. When it
// did not (only NoEntry or Errors readings), a record should say "not
// available" rather than report PeakBytes as 0.
func (t Timeline) Available() bool { return len(t.Samples) > 0 }

// Sampler reads ProcessBytes (and the utilization of the GPUs the process
// is on, device-wide and its own) in the background so that a run can record how its GPU memory
// moved, not just where it ended. Create it with NVML.Sample and end it
// with Stop.
type Sampler struct {
	n     *NVML
	every time.Duration
	start time.Time
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once

	mu   sync.Mutex // guards the rest while the goroutine runs
	tl   Timeline
	last Sample
	seen bool

	utilSum float64   // of the Samples' GPUUtilPct
	utilN   int       // Samples with a GPUUtilPct
	pcts    []float64 // the block the Samples' percentages point into

	procSMSum, procMemSum float64 // of the Samples' ProcessSMUtilPct and ProcessMemUtilPct
	procN                 int     // Samples with them

	// utilWorded: UtilFirstErr is set, so later failures are only
	// counted (NVML.gpuUtil builds no error); procWorded likewise for
	// ProcessUtilFirstErr. procSeen is, per GPU, the newest NVML
	// timestamp seen, the since of the next ProcessUtilization (nil until
	// the first reading with a figure). Read and written by the sampler's
	// goroutine only.
	utilWorded, procWorded bool
	procSeen               []uint64
}

// Sample starts a goroutine that reads ProcessBytes(pid) at once, then
// every interval (DefaultInterval if every <= 0), and once more when Stop
// is called, so even a run shorter than one interval has a first and a
// last reading. Each reading that finds the process's memory also reads
// the utilization of the GPUs it is on (Sample.GPUUtilPct) and the
// process's own there (Sample.ProcessSMUtilPct: NVML's samples since the
// previous reading, those from before Sample is called left out). Stop every
// Sampler before closing n: readings after Close fail and count as errors.
func (n *NVML) Sample(pid int, every time.Duration) *Sampler {
	if every <= 0 {
		every = DefaultInterval
	}
	s := &Sampler{
		n:     n,
		every: every,
		start: time.Now(),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
		tl: Timeline{
			PID:             pid,
			IntervalSeconds: every.Seconds(),
			Samples:         []Sample{},
		},
	}
	go s.run()
	return s
}

func (s *Sampler) run() {
	defer close(s.done)
	s.read()
	t := time.NewTicker(s.every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			s.read()
			return
		case <-t.C:
			s.read()
		}
	}
}

// read takes one reading and adds it to the timeline. The NVML calls are
// made outside mu, so Latest never waits on them.
func (s *Sampler) read() {
	per, err := s.n.ProcessBytesPerDevice(s.tl.PID)
	at := time.Since(s.start).Seconds()
	var r reading
	if err == nil && s.procSeen == nil {
		// The samples NVML stamped before the watch began are not the
		// watch's: start every GPU's since at the Sampler's start.
		s.procSeen = make([]uint64, len(per))
		for i := range s.procSeen {
			s.procSeen[i] = uint64(s.start.UnixMicro())
		}
	}
	if err == nil {
		for i, v := range per {
			r.bytes += v
			if v <= 0 {
				continue // not on this GPU: its utilization is others' work
			}
			if i < len(s.procSeen) {
				s.readProcessUtil(i, &r)
			}
			s.readGPUUtil(i, &r)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err == nil:
		s.add(at, &r)
	case errors.Is(err, ErrNoProcessEntry):
		s.tl.NoEntry++
		s.tl.NoEntryReason = err.Error()
	default:
		if s.tl.Errors == 0 {
			s.tl.FirstErr = err.Error()
		}
		s.tl.Errors++
	}
}

// reading is one reading's figures over the process's GPUs, before they
// are added to the timeline.
type reading struct {
	bytes      int64 // the process's device memory, all GPUs
	utilSum    float64
	utilN      int
	utilFailed bool  // a GPU of the process gave no utilization
	utilErr    error // why, when the timeline has no UtilFirstErr yet
	procSM     float64
	procMem    float64
	procN      int
	procFailed bool  // a GPU of the process gave no per-process reading
	procErr    error // why, when the timeline has no ProcessUtilFirstErr yet
}

// readProcessUtil adds to r the process's own utilization of GPU i since
// the last reading.
func (s *Sampler) readProcessUtil(i int, r *reading) {
	pu, ret, perr := s.n.processUtilization(i, s.tl.PID, s.procSeen[i])
	s.procSeen[i] = pu.LastSeen
	switch {
	case !processUtilOK(ret, perr):
		if !s.procWorded && !r.procFailed {
			r.procErr = s.n.processUtilErr(i, ret, perr)
		}
		r.procFailed = true
	case pu.Known():
		r.procSM += pu.SMPct
		r.procMem += pu.MemPct
		r.procN++
	}
}

// readGPUUtil adds to r GPU i's utilization, building the error only for
// the first failure the timeline will word.
func (s *Sampler) readGPUUtil(i int, r *reading) {
	var g int
	ok := false
	if s.utilWorded || r.utilFailed {
		g, ok = s.n.gpuUtil(i) // counted only: no error built
	} else {
		var uerr error
		g, _, uerr = s.n.Utilization(i)
		ok, r.utilErr = uerr == nil, uerr
	}
	if !ok {
		r.utilFailed = true
		return
	}
	r.utilSum += float64(g)
	r.utilN++
}

// add puts reading r, taken at seconds, in the timeline: a sample with
// the GPUs' mean utilization and the process's, and the counts and first
// words of the failures. s.mu is held.
func (s *Sampler) add(at float64, r *reading) {
	smp := Sample{Seconds: at, Bytes: r.bytes}
	if r.utilN > 0 {
		smp.GPUUtilPct = s.pct(r.utilSum / float64(r.utilN))
		s.utilSum += *smp.GPUUtilPct
		s.utilN++
	}
	if r.utilFailed {
		if r.utilErr != nil {
			s.tl.UtilFirstErr = r.utilErr.Error()
			s.utilWorded = true
		}
		s.tl.UtilErrors++
	}
	switch {
	case r.procN > 0:
		smp.ProcessSMUtilPct = s.pct(r.procSM / float64(r.procN))
		smp.ProcessMemUtilPct = s.pct(r.procMem / float64(r.procN))
		s.procSMSum += *smp.ProcessSMUtilPct
		s.procMemSum += *smp.ProcessMemUtilPct
		s.procN++
	case !r.procFailed:
		s.tl.ProcessUtilNoSample++
	}
	if r.procFailed {
		if r.procErr != nil {
			s.tl.ProcessUtilFirstErr = r.procErr.Error()
			s.procWorded = true
		}
		s.tl.ProcessUtilErrors++
	}
	s.tl.Samples = append(s.tl.Samples, smp)
	s.tl.PeakBytes = max(s.tl.PeakBytes, r.bytes)
	s.last, s.seen = smp, true
}

// pct returns a pointer to v for a Sample's percentage, from a block of 64
// that is never grown in place (so earlier pointers stay valid): one
// allocation per 64 readings, not one per reading.
func (s *Sampler) pct(v float64) *float64 {
	if len(s.pcts) == cap(s.pcts) {
		s.pcts = make([]float64, 0, 64)
	}
	s.pcts = append(s.pcts, v)
	return &s.pcts[len(s.pcts)-1]
}

// Latest returns the most recent reading that gave a figure, and false if
// there has been none yet: for a live display, or a test that waits for
// the sampler to have seen a change, without stopping it.
func (s *Sampler) Latest() (Sample, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last, s.seen
}

// Stop takes a last reading, ends the goroutine and returns the timeline.
// It may be called more than once; later calls return the same timeline.
func (s *Sampler) Stop() Timeline {
	s.once.Do(func() { close(s.stop) })
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	tl := s.tl
	tl.Samples = append([]Sample(nil), s.tl.Samples...)
	if tl.Samples == nil {
		tl.Samples = []Sample{}
	}
	if s.utilN > 0 {
		mean := s.utilSum / float64(s.utilN)
		tl.MeanGPUUtilPct = &mean
	}
	if s.procN > 0 {
		sm, mem := s.procSMSum/float64(s.procN), s.procMemSum/float64(s.procN)
		tl.MeanProcessSMUtilPct, tl.MeanProcessMemUtilPct = &sm, &mem
	}
	return tl
}

// checkPID rejects pids NVML cannot hold (it stores them as unsigned
// 32-bit), so a caller's mistake is an error rather than a silent miss.
func checkPID(pid int) error {
	if pid <= 0 || int64(pid) > int64(^uint32(0)) {
		return fmt.Errorf("gpumem: pid %d out of range", pid)
	}
	return nil
}
