package outside

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"memprobe/instrument/procfs"
	"memprobe/instrument/reconcile"
	"memprobe/schema"
)

// walker takes full walks of one process's address space.
type walker struct {
	fs   procfs.FS
	pid  int
	page int
	cpus int

	// Read at the start, and again after an execve (refresh): a process
	// cannot change another's limits or environment, but an execve can
	// bring another environment and another program.
	mu           sync.Mutex
	stackDefault int64
	arenaMax     string
	isGo         bool
	lastLen      int // the last smaps read's length: the next one's buffer
}

func newWalker(fs procfs.FS, pid int, isGo bool) *walker {
	w := &walker{fs: fs, pid: pid, page: os.Getpagesize()}
	w.cpus = onlineCPUs("/sys/devices/system/cpu/online")
	w.refresh(isGo)
	return w
}

// refresh reads again what depends on the program the process runs.
func (w *walker) refresh(isGo bool) {
	stack := stackLimit(w.fs.Path(w.pid, "limits"))
	arenaMax := environ(w.fs.Path(w.pid, "environ"), "MALLOC_ARENA_MAX")
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stackDefault, w.arenaMax, w.isGo = stack, arenaMax, isGo
}

// walk reads the process now and reconciles it. raw is the smaps text;
// cpu what the walk took of the CPU (the kernel's page walks for smaps
// most of it), which is what it costs the program: under load its wall
// time is mostly waiting for a CPU, often three to five times as long
// (node on 2 cores: 3.0 ms of CPU over 13.6 ms, 30.9 over 90.2).
func (w *walker) walk() (snap *schema.Snapshot, raw []byte, cpu time.Duration, err error) {
	t0 := time.Now()
	runtime.LockOSThread() // the thread's CPU clock is the walk's
	defer runtime.UnlockOSThread()
	c0 := threadCPU()
	defer func() { cpu = threadCPU() - c0 }()
	w.mu.Lock()
	stackDefault, arenaMax, isGo, hint := w.stackDefault, w.arenaMax, w.isGo, w.lastLen*5/4
	w.mu.Unlock()
	// status before and after the smaps read: what changed between them
	// explains a VmSize that Σ smaps Size does not match.
	before, _ := w.fs.ReadStatus(w.pid)
	path := w.fs.Path(w.pid, "smaps")
	raw, err = procfs.ReadWhole(path, hint)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("reading smaps: %w", err)
	}
	w.mu.Lock()
	w.lastLen = len(raw)
	w.mu.Unlock()
	if testHookInWalk != nil {
		testHookInWalk()
	}
	ms, err := procfs.ParseSmaps(raw, path)
	if err != nil {
		return nil, nil, 0, err
	}
	if len(ms) == 0 {
		return nil, nil, 0, fmt.Errorf("reading smaps: %s is empty (the process is exiting)", path)
	}
	sps := threadSPs(w.fs, w.pid)
	st, err := w.fs.ReadStatus(w.pid)
	if err != nil {
		return nil, nil, 0, err
	}
	readMem, closeMem, memErr := reconcile.OpenMem(w.fs.Path(w.pid, "mem"))
	defer closeMem()
	// A process that exited during the walk has a status without Vm
	// lines and no memory to open. Its smaps was read whole, but the
	// walk would set VmRSS 0 against smaps' pages, and blame ptrace
	// (make -j2's cc1, walked as it exited).
	if st.VmSizeBytes == 0 || errors.Is(memErr, syscall.ESRCH) {
		return nil, nil, 0, fmt.Errorf("walking pid %d: it exited during the walk: %w", w.pid, syscall.ESRCH)
	}
	in := reconcile.Input{
		Status: st, StatusBefore: before, Mappings: ms, ThreadSPs: sps, ThreadStackBytes: stackDefault,
		Resident: func(lo, hi uint64) (int64, error) { return w.fs.ResidentBytes(w.pid, lo, hi, w.page) },
		// The process's own view: its files under its root (a container,
		// a file replaced since it was mapped), and its memory for the
		// glibc heaps' arena pointers (exact arenas where ptrace access
		// allows: a child of the probe, or root).
		OpenFile:   reconcile.OpenUnder(w.fs.Path(w.pid, "root")),
		ReadMemory: readMem,
	}
	rec := reconcile.Compute(in)
	if memErr != nil {
		rec.Warnings = append(rec.Warnings, fmt.Sprintf("the process's memory could not be read (%v): glibc's large blocks and CPython's pools are not found by their headers, and the arenas are counted by an estimate; reading it needs ptrace access (its parent, root, or kernel.yama.ptrace_scope 0)", memErr))
	}
	snap = &schema.Snapshot{
		Threads: st.Threads, VmHWMBytes: st.VmHWMBytes, ThreadStackDefaultBytes: stackDefault,
		CPUs: w.cpus, GlibcArenaLimit: 8 * w.cpus, MallocArenaMax: arenaMax,
		AnonBySize: sizeClasses(ms),
	}
	for _, s := range sps {
		if s.SP != 0 {
			snap.StackPointers++
		}
	}
	snap.GPUMappings = outsideParts(&rec, ms, isGo)
	snap.Reconciliation = rec
	snap.WalkMs = ms64(time.Since(t0))
	return snap, raw, 0, nil
}

// testHookInWalk, where a test sets it, runs in a walk after smaps is read.
var testHookInWalk func()

// threadCPU is the calling thread's CPU time.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// Parts that only the inside view can fill: Go's runtime/metrics classes
// and the trainer's ledger. From outside they are 0 and are left out.
var insideOnly = map[string]bool{
	"go.heap.objects.ledger": true, "go.heap.objects.other": true, "go.heap.free": true,
	"go.stacks.goroutines": true, "go.heap.released": true, "go.arena.other": true,
	"go.runtime.metadata": true, "outside_go.ledger": true, "stacks.workers": true,
}

// outsideParts adjusts a reconciliation for the outside view: it drops
// the inside-only parts that are empty and, for a Go program, counts the
// anonymous memory no source claims as go.runtime.anon (Go's arenas and
// metadata cannot be told apart from outside). It returns the number of
// GPU driver mappings (reconcile's gpu.driver part).
func outsideParts(r *reconcile.Reconciliation, ms []procfs.Mapping, isGo bool) int {
	parts := r.Parts[:0]
	for _, p := range r.Parts {
		if insideOnly[p.Name] && p.Bytes == 0 && p.ReservedBytes == 0 {
			continue
		}
		parts = append(parts, p)
	}
	r.Parts = parts
	gpuMaps := 0
	for _, m := range ms {
		if reconcile.GPUDevice(m.Path) {
			gpuMaps++
		}
	}

	if isGo && len(r.UnexplainedMappings) > 0 {
		var g reconcile.Part
		for _, p := range r.UnexplainedMappings {
			g.Bytes += p.ResidentBytes
			g.ReservedBytes += p.ReservedBytes
			g.Count++
		}
		g.Name = "go.runtime.anon"
		g.Note = "a Go program's anonymous mappings no other source claims: Go's heap arenas and runtime metadata (and any C memory), not told apart from outside; --pprof gives the heap"
		r.Parts = append(r.Parts, g)
		r.UnexplainedBytes -= g.Bytes
		r.UnexplainedReservedBytes -= g.ReservedBytes
		r.UnexplainedMappings = []reconcile.Piece{}
		r.UnexplainedNote = "a Go program: its unclaimed anonymous mappings are go.runtime.anon; the rest is " + r.UnexplainedNote
	}
	return gpuMaps
}

// sizeClasses puts every anonymous mapping in a size class.
func sizeClasses(ms []procfs.Mapping) []schema.SizeClass {
	out := []schema.SizeClass{
		{Class: "< 64 KiB", MinBytes: 0, MaxBytes: 64 << 10},
		{Class: "64 KiB to 1 MiB", MinBytes: 64 << 10, MaxBytes: 1 << 20},
		{Class: "1 to 8 MiB", MinBytes: 1 << 20, MaxBytes: 8 << 20},
		{Class: "8 to 64 MiB", MinBytes: 8 << 20, MaxBytes: 64 << 20},
		{Class: ">= 64 MiB", MinBytes: 64 << 20},
	}
	for _, m := range ms {
		if m.Path != "" && !strings.HasPrefix(m.Path, "[anon:") {
			continue
		}
		for i := range out {
			c := &out[i]
			if int64(m.SizeBytes) >= c.MinBytes && (c.MaxBytes == 0 || int64(m.SizeBytes) < c.MaxBytes) {
				c.Mappings++
				c.ReservedBytes += int64(m.SizeBytes)
				c.ResidentBytes += int64(m.RssBytes)
				break
			}
		}
	}
	return out
}

// threadSPs reads every thread's stack pointer: task/TID/syscall (needs
// ptrace access; a blocked thread's), else field 29 of task/TID/stat
// (kstkesp: most kernels print 0 there unless the task is dumping core).
func threadSPs(fs procfs.FS, pid int) []procfs.ThreadSP {
	sps, err := fs.ReadThreadSPs(pid)
	if err != nil {
		// A malformed syscall file: fall back to stat alone.
		ents, _ := os.ReadDir(fs.Path(pid, "task"))
		sps = sps[:0]
		for _, e := range ents {
			if tid, err := strconv.Atoi(e.Name()); err == nil {
				sps = append(sps, procfs.ThreadSP{TID: tid})
			}
		}
	}
	for i := range sps {
		if sps[i].SP == 0 {
			sps[i].SP = kstkesp(filepath.Join(fs.Path(pid, "task"), strconv.Itoa(sps[i].TID), "stat"))
		}
	}
	return sps
}

// kstkesp reads field 29 of a stat file; 0 when unreadable.
func kstkesp(path string) uint64 {
	f := procfs.StatFields(path)
	const field = 29 - 3 // StatFields starts at field 3 (state)
	if len(f) <= field {
		return 0
	}
	sp, _ := strconv.ParseUint(f[field], 10, 64)
	return sp
}

// stackLimit is the default pthread stack size of the process: its
// RLIMIT_STACK soft limit ("Max stack size" of /proc/PID/limits), 2 MiB
// when unlimited (x86-64 glibc's ARCH_STACK_DEFAULT_SIZE), 8 MiB when
// unreadable.
func stackLimit(path string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return reconcile.DefaultThreadStackReserveBytes
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "Max stack size") {
			continue
		}
		fields := strings.Fields(strings.TrimPrefix(line, "Max stack size"))
		if len(fields) == 0 {
			break
		}
		if fields[0] == "unlimited" {
			return 2 << 20
		}
		if n, err := strconv.ParseInt(fields[0], 10, 64); err == nil && n > 0 {
			return n
		}
	}
	return reconcile.DefaultThreadStackReserveBytes
}

// onlineCPUs counts the CPUs of a cpu list such as "0-3,5" (the
// sysfs online file, which glibc reads for its arena limit);
// runtime.NumCPU when unreadable.
func onlineCPUs(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return runtime.NumCPU()
	}
	n, err := countCPUList(strings.TrimSpace(string(b)))
	if err != nil || n == 0 {
		return runtime.NumCPU()
	}
	return n
}

func countCPUList(s string) (int, error) {
	n := 0
	for _, r := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return 0, err
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				return 0, err
			}
		}
		if b < a {
			return 0, errors.New("descending range")
		}
		n += b - a + 1
	}
	return n, nil
}

// environ returns the value of key in a NUL-separated environ file; ""
// when unset or unreadable.
func environ(path, key string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	for _, kv := range bytes.Split(b, []byte{0}) {
		if k, v, ok := bytes.Cut(kv, []byte("=")); ok && string(k) == key {
			return string(v)
		}
	}
	return ""
}

func ms64(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
