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
// or, when the training failed, discarded: s.Discard() writes nothing. No
// file named in Options is touched before Stop: the CPU profile and the
// heap-peak profiles are streamed to temporary files beside their paths
// and renamed over them by Stop (removed by Discard), and the profiles
// taken at the end are written then, each through a temporary file, so
// that a failed run leaves what was there before.
//
// Mutex and block profiling cost time on every contended lock and blocking
// operation, so their rates are set only when those profiles are asked for,
// and restored by Stop. Labels (pprof.Do / SetGoroutineLabels) are set by
// the trainer; the CPU profile carries them.
package profiling

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"memprobe/internal/atomicfile"
	"memprobe/schema"
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

// File is one profile written (schema.ProfileFile).
type File = schema.ProfileFile

// Report is what a session did (schema.Profiles). Slices are never nil.
type Report = schema.Profiles

// Session is a running set of profiles. Stop or Discard ends it once.
type Session struct {
	o       Options
	paths   map[string]string // kind -> path
	start   time.Time
	cpuFile *os.File // the CPU profile's temporary file, renamed to paths["cpu"] by Stop
	server  *server
	peak    *peakWatcher

	prevMutex int
	setMutex  bool
	setBlock  bool
	prevRate  int
	setRate   bool

	mu      sync.Mutex
	files   []File
	staged  map[string]string // path -> its temporary file, for files written during the session
	warn    []string
	stopped bool
}

// Flags names the command-line flag of each profile kind (`probe train`'s),
// for errors; a path that comes from Dir is named by "--profile-dir".
var Flags = map[string]string{
	"cpu": "--cpuprofile", "heap": "--memprofile", "allocs": "--allocprofile",
	"mutex": "--mutexprofile", "block": "--blockprofile",
}

// Outputs are the files o writes at the end, with the flags that name them,
// in a fixed order (the heap-peak profiles beside the heap profile are
// not listed: their names are numbered after it).
func (o Options) Outputs() []atomicfile.Path {
	paths := o.Paths()
	var out []atomicfile.Path
	for _, kind := range []string{"cpu", "heap", "allocs", "mutex", "block"} {
		path, ok := paths[kind]
		if !ok {
			continue
		}
		flag := Flags[kind]
		if o.fromDir(kind) {
			flag = "--profile-dir"
		}
		out = append(out, atomicfile.Path{Flag: flag, Path: path})
	}
	return out
}

// fromDir reports whether kind's path is Dir's, not its own flag's.
func (o Options) fromDir(kind string) bool {
	explicit := map[string]string{"cpu": o.CPU, "heap": o.Heap, "allocs": o.Allocs, "mutex": o.Mutex, "block": o.Block}[kind]
	return explicit == "" && o.Dir != ""
}

// CheckOutputs fails, naming the flag, when a profile could not be
// written: its directory is missing or not writable, or the path is a
// directory; Dir may be missing if it could be created (Start creates
// it). It creates nothing that stays. A command calls it before any work,
// so that a typo fails at once as a usage error; Start checks the same.
func (o Options) CheckOutputs() error {
	dirPending := false
	if o.Dir != "" {
		fi, err := os.Stat(o.Dir)
		switch {
		case err == nil && !fi.IsDir():
			return fmt.Errorf("--profile-dir %s: exists and is not a directory", o.Dir)
		case err != nil && !missing(err):
			return fmt.Errorf("--profile-dir %s: %w", o.Dir, unwrapPath(err))
		case err != nil:
			if err := checkCreatable(o.Dir); err != nil {
				return fmt.Errorf("--profile-dir %s: cannot be created: %w", o.Dir, err)
			}
			dirPending = true
		}
	}
	for _, p := range o.Outputs() {
		if dirPending && p.Flag == "--profile-dir" {
			continue // checked above: the directory is made by Start
		}
		if err := atomicfile.CheckWritable(p.Path); err != nil {
			return fmt.Errorf("%s %w", p.Flag, err)
		}
	}
	return nil
}

// checkCreatable fails when the missing directory dir could not be made:
// its nearest existing parent is not a directory or not writable.
func checkCreatable(dir string) error {
	parent := filepath.Dir(filepath.Clean(dir))
	for {
		fi, err := os.Stat(parent)
		if err == nil {
			if !fi.IsDir() {
				return fmt.Errorf("%s is not a directory", parent)
			}
			if err := atomicfile.CheckWritable(filepath.Join(parent, "x")); err != nil {
				return fmt.Errorf("directory %s is not writable", parent)
			}
			return nil
		}
		if !missing(err) {
			return unwrapPath(err)
		}
		next := filepath.Dir(parent)
		if next == parent {
			return unwrapPath(err)
		}
		parent = next
	}
}

// missing reports whether a Stat error says the path is not there: it or a
// parent does not exist, or a parent is a file (ENOTDIR).
func missing(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// unwrapPath drops the path an *fs.PathError repeats.
func unwrapPath(err error) error {
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		return pe.Err
	}
	return err
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
// profile (into a temporary file beside its path), sets the mutex and block
// rates asked for, starts the live-heap watcher and the pprof server. On
// error nothing is left running, and no file is left behind but Dir.
func Start(o Options) (*Session, error) {
	s := &Session{o: o, paths: o.Paths(), start: time.Now(), staged: map[string]string{}}
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
	for _, kind := range []string{"cpu", "heap", "allocs", "mutex", "block"} {
		if path, ok := s.paths[kind]; ok {
			if err := atomicfile.CheckWritable(path); err != nil {
				return fmt.Errorf("%s profile %w", kind, err)
			}
		}
	}
	if path, ok := s.paths["cpu"]; ok {
		// The profile streams for the whole session: into a temporary
		// file, renamed over path by Stop, so that a failed run leaves
		// path as it was.
		f, err := createStaged(path)
		if err != nil {
			return fmt.Errorf("cpu profile %s: %w", path, err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			os.Remove(f.Name())
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

// createStaged and commitStaged stage a profile beside its path and put
// it in place when the session stops (atomicfile: a failed run leaves the
// path as it was; a link is followed, a pipe or device written through).
var (
	createStaged = atomicfile.CreateStaged
	commitStaged = atomicfile.CommitStaged
)

// abort undoes a partial Start.
func (s *Session) abort() { s.discard() }

// Discard ends the session without writing any profile: the CPU profile
// stops and its temporary file is removed, as are the heap-peak profiles
// taken so far; the rates are restored and the server closed. What was at
// the profiles' paths before Start is left as it was. It is what a failed
// job calls instead of Stop. A nil Session, or one already stopped, is a
// no-op. It is safe to call from another goroutine than Start's (the
// memory watchdog's, before the process exits).
func (s *Session) Discard() {
	if s == nil {
		return
	}
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return
	}
	s.stopped = true
	s.mu.Unlock()
	s.discard()
}

func (s *Session) discard() {
	if s.peak != nil {
		s.peak.stop()
	}
	if s.cpuFile != nil {
		pprof.StopCPUProfile()
		s.cpuFile.Close()
		os.Remove(s.cpuFile.Name())
	}
	s.mu.Lock()
	for _, tmp := range s.staged {
		os.Remove(tmp)
	}
	s.staged = nil
	s.mu.Unlock()
	s.restoreRates()
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

// stage records a profile written during the session to the temporary
// file tmp, to be renamed over f.Path by Stop; it reports false, and
// removes tmp, when the session has ended meanwhile.
func (s *Session) stage(f File, tmp string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.staged == nil {
		os.Remove(tmp)
		return false
	}
	if old, ok := s.staged[f.Path]; ok {
		os.Remove(old)
	}
	s.staged[f.Path] = tmp
	s.files = append(s.files, f)
	return true
}

func (s *Session) warnf(format string, args ...any) {
	s.mu.Lock()
	s.warn = append(s.warn, fmt.Sprintf(format, args...))
	s.mu.Unlock()
}

// Stop ends the CPU profile, writes the heap, allocs, mutex and block
// profiles asked for, puts the CPU and heap-peak profiles in place
// (renamed from their temporary files), restores the rates and closes the
// server. A nil Session is a no-op. It returns the errors joined, after
// doing all it can; a profile that could not be written is not in the
// Report's Files.
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
		path, tmp := s.paths["cpu"], s.cpuFile.Name()
		err := s.cpuFile.Sync()
		if cerr := s.cpuFile.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = commitStaged(tmp, path)
		}
		if err != nil {
			os.Remove(tmp)
			errs = append(errs, fmt.Errorf("cpu profile %s: %w", path, err))
		} else {
			s.record(File{Kind: "cpu", Path: path, TMs: s.since()})
		}
	}
	// The heap-peak profiles taken during the session.
	s.mu.Lock()
	staged := s.staged
	s.staged = nil
	s.mu.Unlock()
	failed := map[string]bool{}
	for path, tmp := range staged {
		if err := commitStaged(tmp, path); err != nil {
			os.Remove(tmp)
			failed[path] = true
			errs = append(errs, fmt.Errorf("heap peak profile %s: %w", path, err))
		}
	}
	if len(failed) > 0 {
		s.mu.Lock()
		s.files = slices.DeleteFunc(s.files, func(f File) bool { return failed[f.Path] })
		s.mu.Unlock()
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

// stageProfile writes the named profile, as writeProfile does, to a new
// temporary file beside path, synced and closed, and returns its name: the
// profile becomes path when the session stops (commitStaged).
func stageProfile(kind, path string) (tmp string, err error) {
	p := pprof.Lookup(kind)
	if p == nil {
		return "", fmt.Errorf("%s profile: runtime/pprof has no such profile", kind)
	}
	f, err := createStaged(path)
	if err != nil {
		return "", fmt.Errorf("%s profile %s: %w", kind, path, err)
	}
	bw := bufio.NewWriter(f)
	err = p.WriteTo(bw, 0)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("%s profile %s: %w", kind, path, err)
	}
	return f.Name(), nil
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
