// Package profiling writes the Go profiles of one job: CPU, heap at the
// end, allocations, mutex and block contention, heap profiles at the live
// heap's peaks, and serves net/http/pprof on a loopback address while the
// job runs.
//
// It answers "where in the code" beside the probe's "how much": the ledger
// and runtime counters say what is held and allocated, these profiles say
// which functions did it. Every file is a standard gzipped pprof protobuf
// that `go tool pprof` opens.
//
// A Session is started before training and stopped after it:
//
//	s, err := profiling.Start(opts)   // CPU profile on, rates set, server up
//	... train ...
//	files, err := s.Stop()            // heap/allocs/mutex/block written
//
// Mutex and block profiling cost time on every contended lock and blocking
// operation, so their rates are set only when those profiles are asked for,
// and restored by Stop. Labels (pprof.Do / SetGoroutineLabels) are set by
// the trainer; the CPU profile carries them.
package profiling

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	"memprobe/internal/atomicfile"
)

// Defaults of the peak-heap trigger and the contention rates.
const (
	// PeakMarginFrac and PeakMinBytes: a peak profile is written when the
	// live heap exceeds the last profiled high-water mark by this fraction
	// and by at least this many bytes.
	PeakMarginFrac = 0.10
	PeakMinBytes   = 4 << 20
	// PeakMinInterval is the least time between two peak profiles.
	PeakMinInterval = time.Second
	// DefaultPeakMax bounds the number of peak profiles per session.
	DefaultPeakMax = 8
	// MutexFraction samples every mutex contention event
	// (runtime.SetMutexProfileFraction); BlockRateNs samples blocking
	// events of at least 1 µs on average (runtime.SetBlockProfileRate).
	MutexFraction = 1
	BlockRateNs   = 1000
)

// Options says which profiles to take and where. Paths are files; Dir, if
// set, turns every profile on, each named after Name in that directory.
type Options struct {
	// Name labels the files written under Dir: "<Name>.cpu.pprof", ... It
	// should be "<plan>-<phase>" for a phase run; "" means "default".
	Name string
	// Dir, when set, writes all profiles into it (created if missing).
	Dir string
	// CPU, Heap, Allocs, Mutex, Block are explicit paths; each overrides
	// the Dir name of its profile and turns it on without Dir.
	CPU, Heap, Allocs, Mutex, Block string
	// PeakMax bounds heap profiles written at live-heap peaks (0: none;
	// the command's default is DefaultPeakMax). Peak profiles are written
	// only when a heap profile is asked for (Heap or Dir), next to it.
	PeakMax int
	// PprofAddr serves net/http/pprof on this host:port while the session
	// runs; "" for none. Loopback only unless AllowRemote.
	PprofAddr   string
	AllowRemote bool
	// MemProfileRate, when > 0, sets runtime.MemProfileRate for the
	// session (restored by Stop): 1 records every allocation in the heap
	// and allocs profiles, so that a loop's few allocations per step are
	// all there; the default samples one per 512 KiB allocated. The
	// allocations before Start keep the old rate.
	MemProfileRate int
}

// Validate reports the first option out of range.
func (o Options) Validate() error {
	switch {
	case o.PeakMax < 0:
		return fmt.Errorf("heap-peak-profiles %d must be >= 0", o.PeakMax)
	case o.MemProfileRate < 0:
		return fmt.Errorf("memprofile-rate %d must be >= 0", o.MemProfileRate)
	case o.AllowRemote && o.PprofAddr == "":
		return fmt.Errorf("pprof-allow-remote needs pprof-addr")
	case o.PprofAddr != "":
		return CheckAddr(o.PprofAddr, o.AllowRemote)
	}
	return nil
}

// Enabled reports whether o asks for anything.
func (o Options) Enabled() bool {
	return o.Dir != "" || o.CPU != "" || o.Heap != "" || o.Allocs != "" || o.Mutex != "" || o.Block != "" || o.PprofAddr != ""
}

// File is one profile written.
type File struct {
	// Kind is cpu, heap, allocs, mutex, block or heap-peak.
	Kind string `json:"kind"`
	Path string `json:"path"`
	// HeapLiveBytes is, for heap-peak, the live heap (as of the last GC)
	// that triggered it.
	HeapLiveBytes int64 `json:"heap_live_bytes,omitempty"`
	// TMs is when it was written, in milliseconds since Start.
	TMs float64 `json:"t_ms"`
}

// Report is what a session did. Slices are never nil.
type Report struct {
	Files []File `json:"files"`
	// PprofAddr is the address the server listened on ("" if none).
	PprofAddr string `json:"pprof_addr,omitempty"`
	// HeapLiveMaxBytes is the largest live heap seen at a GC during the
	// session, whether or not a profile was written for it.
	HeapLiveMaxBytes int64 `json:"heap_live_max_bytes"`
	// PeakSkipped counts live-heap peaks not profiled because PeakMax
	// was reached.
	PeakSkipped int      `json:"peak_skipped"`
	Warnings    []string `json:"warnings"`
}

// Session is a running set of profiles. Stop ends it once.
type Session struct {
	o       Options
	paths   map[string]string // kind -> path
	start   time.Time
	cpuFile *os.File
	server  *server
	peak    *peakWatcher

	prevMutex int
	setMutex  bool
	setBlock  bool
	prevRate  int
	setRate   bool

	mu      sync.Mutex
	files   []File
	warn    []string
	stopped bool
}

// Paths resolves which files o writes, by kind; a kind absent from the map
// is off.
func (o Options) Paths() map[string]string {
	name := SafeName(o.Name)
	p := map[string]string{}
	for _, k := range []struct {
		kind, path string
	}{{"cpu", o.CPU}, {"heap", o.Heap}, {"allocs", o.Allocs}, {"mutex", o.Mutex}, {"block", o.Block}} {
		switch {
		case k.path != "":
			p[k.kind] = k.path
		case o.Dir != "":
			p[k.kind] = filepath.Join(o.Dir, name+"."+k.kind+".pprof")
		}
	}
	return p
}

// SafeName turns a plan and phase label into a file-name part: letters,
// digits, '.', '_' and '-' are kept, anything else becomes '_'; "" is
// "default".
func SafeName(s string) string {
	if s == "" {
		return "default"
	}
	b := []byte(s)
	for i, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	return string(b)
}

// Start begins the session: it checks every output location, starts the CPU
// profile, sets the mutex and block rates asked for, starts the live-heap
// watcher and the pprof server. On error nothing is left running.
func Start(o Options) (*Session, error) {
	s := &Session{o: o, paths: o.Paths(), start: time.Now()}
	if err := s.start1(); err != nil {
		s.abort()
		return nil, err
	}
	return s, nil
}

func (s *Session) start1() error {
	o := s.o
	if o.PprofAddr != "" {
		if err := CheckAddr(o.PprofAddr, o.AllowRemote); err != nil {
			return err
		}
	}
	if o.Dir != "" {
		if err := os.MkdirAll(o.Dir, 0o755); err != nil {
			return fmt.Errorf("profile dir %s: %w", o.Dir, err)
		}
	}
	// Check every output location now, so a typo fails before training.
	for kind, path := range s.paths {
		if err := checkWritable(path); err != nil {
			return fmt.Errorf("%s profile %s: %w", kind, path, err)
		}
	}
	if path, ok := s.paths["cpu"]; ok {
		f, err := os.Create(path)
		if err != nil {
			return fmt.Errorf("cpu profile %s: %w", path, err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return fmt.Errorf("cpu profile %s: %w", path, err)
		}
		s.cpuFile = f
	}
	if o.MemProfileRate > 0 {
		s.prevRate, s.setRate = runtime.MemProfileRate, true
		runtime.MemProfileRate = o.MemProfileRate
	}
	if _, ok := s.paths["mutex"]; ok {
		s.prevMutex = runtime.SetMutexProfileFraction(MutexFraction)
		s.setMutex = true
	}
	if _, ok := s.paths["block"]; ok {
		runtime.SetBlockProfileRate(BlockRateNs)
		s.setBlock = true
	}
	if heap, ok := s.paths["heap"]; ok && o.PeakMax > 0 {
		n := o.PeakMax
		s.peak = startPeakWatcher(s, heap, n)
	}
	if o.PprofAddr != "" {
		srv, err := serve(o.PprofAddr)
		if err != nil {
			return err
		}
		s.server = srv
	}
	return nil
}

// checkWritable makes sure path's directory exists and path can be
// created, without leaving a file behind that was not there.
func checkWritable(path string) error {
	if _, err := os.Stat(path); err == nil {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		return f.Close()
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(path)
}

// abort undoes a partial Start.
func (s *Session) abort() {
	if s.cpuFile != nil {
		pprof.StopCPUProfile()
		s.cpuFile.Close()
		os.Remove(s.cpuFile.Name())
	}
	s.restoreRates()
	if s.peak != nil {
		s.peak.stop()
	}
	if s.server != nil {
		s.server.close()
	}
}

func (s *Session) restoreRates() {
	if s.setMutex {
		runtime.SetMutexProfileFraction(s.prevMutex)
		s.setMutex = false
	}
	if s.setBlock {
		runtime.SetBlockProfileRate(0)
		s.setBlock = false
	}
	if s.setRate {
		runtime.MemProfileRate = s.prevRate
		s.setRate = false
	}
}

// Addr is the pprof server's address, "" when none runs.
func (s *Session) Addr() string {
	if s == nil || s.server == nil {
		return ""
	}
	return s.server.addr
}

func (s *Session) since() float64 { return float64(time.Since(s.start)) / float64(time.Millisecond) }

func (s *Session) record(f File) {
	s.mu.Lock()
	s.files = append(s.files, f)
	s.mu.Unlock()
}

func (s *Session) warnf(format string, args ...any) {
	s.mu.Lock()
	s.warn = append(s.warn, fmt.Sprintf(format, args...))
	s.mu.Unlock()
}

// Stop ends the CPU profile, writes the heap, allocs, mutex and block
// profiles asked for, restores the rates and closes the server. A nil
// Session is a no-op. It returns the first error, after doing all it can.
func (s *Session) Stop() (Report, error) {
	r := Report{Files: []File{}, Warnings: []string{}}
	if s == nil {
		return r, nil
	}
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return r, errors.New("profiling: session already stopped")
	}
	s.stopped = true
	s.mu.Unlock()

	var errs []error
	if s.peak != nil {
		r.HeapLiveMaxBytes, r.PeakSkipped = s.peak.stop()
	}
	if s.cpuFile != nil {
		pprof.StopCPUProfile()
		if err := s.cpuFile.Close(); err != nil {
			errs = append(errs, fmt.Errorf("cpu profile %s: %w", s.cpuFile.Name(), err))
		} else {
			s.record(File{Kind: "cpu", Path: s.cpuFile.Name(), TMs: s.since()})
		}
	}
	// heap: what is live now, as of a fresh GC (the profile reports the
	// last completed cycle, so collect first to make it current).
	for _, kind := range []string{"heap", "allocs", "mutex", "block"} {
		path, ok := s.paths[kind]
		if !ok {
			continue
		}
		if kind == "heap" {
			runtime.GC()
		}
		if err := writeProfile(kind, path); err != nil {
			errs = append(errs, err)
			continue
		}
		s.record(File{Kind: kind, Path: path, TMs: s.since()})
	}
	s.restoreRates()
	if s.server != nil {
		r.PprofAddr = s.server.addr
		if err := s.server.close(); err != nil {
			errs = append(errs, err)
		}
	}
	s.mu.Lock()
	r.Files = append(r.Files, s.files...)
	r.Warnings = append(r.Warnings, s.warn...)
	s.mu.Unlock()
	return r, errors.Join(errs...)
}

// writeProfile writes the named runtime/pprof profile ("heap", "allocs",
// "mutex", "block") as a gzipped protobuf to path, via a temporary file so
// that a reader never sees half a profile.
func writeProfile(kind, path string) error {
	p := pprof.Lookup(kind)
	if p == nil {
		return fmt.Errorf("%s profile: runtime/pprof has no such profile", kind)
	}
	if err := atomicfile.Write(path, func(w io.Writer) error { return p.WriteTo(w, 0) }); err != nil {
		return fmt.Errorf("%s profile: %w", kind, err)
	}
	return nil
}

// CheckAddr checks --pprof-addr: CheckListenAddr with the job's flag
// names.
func CheckAddr(addr string, allowRemote bool) error {
	return CheckListenAddr("--pprof-addr", "--pprof-allow-remote", addr, allowRemote)
}

// CheckListenAddr accepts a host:port that listens on loopback only: an IP
// literal in 127.0.0.0/8 or ::1, or "localhost". An empty host, 0.0.0.0, ::
// or any other host listens where other machines can reach it; pprof lets
// whoever connects read the process's memory layout and run CPU profiles,
// so those need allowRemote. The port must be a number (0 picks one).
// flag and remoteFlag name the options in the errors.
func CheckListenAddr(flag, remoteFlag, addr string, allowRemote bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%s %q: want host:port, e.g. 127.0.0.1:6060: %v", flag, addr, err)
	}
	if n, err := parsePort(port); err != nil || n < 0 {
		return fmt.Errorf("%s %q: port %q is not a number in [0, 65535]", flag, addr, port)
	}
	if allowRemote || host == "localhost" {
		return nil
	}
	hint := fmt.Sprintf("use 127.0.0.1:%s, or pass %s to expose it to the network", port, remoteFlag)
	ip := net.ParseIP(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	switch {
	case host == "":
		return fmt.Errorf("%s %q: an empty host listens on every interface, not a loopback address; %s", flag, addr, hint)
	case ip == nil:
		return fmt.Errorf("%s %q: host %q is not an IP literal or localhost, so not a loopback address one can check; %s", flag, addr, host, hint)
	case ip.IsUnspecified():
		return fmt.Errorf("%s %q: %s listens on every interface, not a loopback address; %s", flag, addr, host, hint)
	case !ip.IsLoopback():
		return fmt.Errorf("%s %q: %s is not a loopback address; %s", flag, addr, host, hint)
	}
	return nil
}

func parsePort(p string) (int, error) {
	if p == "" || len(p) > 5 {
		return -1, errors.New("bad port")
	}
	n := 0
	for _, c := range []byte(p) {
		if c < '0' || c > '9' {
			return -1, errors.New("bad port")
		}
		n = n*10 + int(c-'0')
	}
	if n > 65535 {
		return -1, errors.New("bad port")
	}
	return n, nil
}
