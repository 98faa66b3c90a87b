package outside

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"

	"golang.org/x/sys/unix"

	"memprobe/outside/sites"
	"memprobe/schema"
)

// SitesOptions asks exec for the program's allocation sites
// (outside/sites): the library preloaded, its records read at exit into
// pprof profiles in Options.OutDir and Process.Sites.
type SitesOptions struct {
	Enabled bool
	// Rate is the mean sampling interval in bytes: 0 means
	// sites.DefaultRate, 1 records every allocation.
	Rate int64
}

func (o *SitesOptions) check(outDir string) error {
	if !o.Enabled {
		if o.Rate != 0 {
			return errors.New("sites-rate: needs --sites")
		}
		return nil
	}
	switch {
	case o.Rate == 0:
		o.Rate = sites.DefaultRate
	case o.Rate < 0:
		return fmt.Errorf("sites-rate %d: want a number of bytes, 1 or more", o.Rate)
	}
	if outDir == "" {
		return errors.New("sites: needs an out-dir to write the profiles to")
	}
	return nil
}

// sitesRun is a --sites run: the records' directory and the clock the
// library's times are on.
type sitesRun struct {
	dir string
	// startMono is CLOCK_MONOTONIC when the watch began (s.start).
	startMono uint64
	goProgram bool
}

// startSites prepares cmd for --sites: checks that the program can be
// preloaded at all, finds the library, makes the records' directory and
// sets cmd.Env. nil when --sites is off.
func startSites(o ExecOptions, cmd *exec.Cmd) (*sitesRun, error) {
	if !o.Sites.Enabled {
		return nil, nil
	}
	path := cmd.Path
	goProg := isGoBinary(path)
	if static, err := staticELF(path); err == nil && static {
		if goProg {
			return nil, fmt.Errorf("exec --sites: %s is a Go program linked statically: LD_PRELOAD needs a dynamic loader, so --sites sees nothing of it; --pprof shows its Go heap", o.Args[0])
		}
		return nil, fmt.Errorf("exec --sites: %s is linked statically: LD_PRELOAD needs a dynamic loader, so --sites cannot record its allocations", o.Args[0])
	}
	lib, err := sites.FindLibrary()
	if err != nil {
		return nil, fmt.Errorf("exec --sites: %w", err)
	}
	dir, err := os.MkdirTemp("", "memprobe-records-") // not memprobe-sites-N: cshared removes those of dead pids
	if err != nil {
		return nil, fmt.Errorf("exec --sites: %w", err)
	}
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = sites.Env(env, lib, dir, o.Sites.Rate)
	return &sitesRun{dir: dir, goProgram: goProg}, nil
}

// monoAt is CLOCK_MONOTONIC at t (a time.Time with its monotonic
// reading). A goroutine preempted between reading the two clocks would
// put t early by as long as it waited (under load, tens of
// milliseconds: a walk read as taken before the frees it followed), so
// the reading is taken where the two reads of CLOCK_MONOTONIC around
// time.Now are closest.
func monoAt(t time.Time) uint64 {
	var best, gap uint64 = 0, ^uint64(0)
	for range 8 {
		a := monoNow()
		since := time.Since(t)
		b := monoNow()
		if b-a < gap {
			best, gap = a+(b-a)/2-uint64(since), b-a
		}
		if gap < 20000 { // 20 µs
			break
		}
	}
	return best
}

func monoNow() uint64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) != nil {
		return 0
	}
	return uint64(ts.Nano())
}

// staticELF says whether path is an ELF executable without a dynamic
// loader (PT_INTERP).
func staticELF(path string) (bool, error) {
	f, err := elf.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false, nil
		}
	}
	return true, nil
}

func isGoBinary(path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	return f.Section(".go.buildinfo") != nil
}

// finishSites reads the records into p.Sites once the program has
// exited, with the arenas of the peak and end walks; what it cannot do
// becomes a warning. Called once the watch has ended.
func (s *Session) finishSites(p *schema.Process) {
	r := s.sites
	if r == nil {
		return
	}
	defer os.RemoveAll(r.dir)
	// The walks' times count from s.start, taken just after the program
	// started; the library's from CLOCK_MONOTONIC.
	r.startMono = monoAt(s.start)
	if r.goProgram || p.Go != nil {
		s.warnf("sites: this is a Go program: --sites sees only its C allocations (cgo and C libraries); --pprof shows its Go heap")
	}
	var walks []sites.Walk
	for _, w := range []struct {
		at   string
		snap *schema.Snapshot
	}{{"peak", p.AtPeak}, {"end", p.End}} {
		if w.snap != nil {
			walks = append(walks, sitesWalk(w.at, 0, w.snap, r.startMono))
		}
	}
	// The largest descendant's highest walk: a driver's (gcc's cc1) is
	// the one that holds the memory.
	if lead, pid := s.sched.highestLead(); lead != nil && pid != 0 {
		walks = append(walks, sitesWalk("peak", pid, lead, r.startMono))
	}
	res, warns, err := sites.Analyze(sites.Options{Dir: r.dir, OutDir: s.opts.OutDir, PID: s.pid, StartMono: r.startMono, Walks: walks})
	for _, w := range warns {
		s.warnf("%s", w)
	}
	switch {
	case errors.Is(err, sites.ErrNoRecords):
		s.warnf("sites: no allocation records appeared: the program's loader ignored LD_PRELOAD (a setuid or statically linked program, or one that clears its environment), so --sites saw none of its allocations")
		return
	case err != nil:
		s.warnf("sites: %v", err)
		return
	}
	p.Sites = res
	for _, f := range res.Profiles {
		s.notes.addFile(f.Path)
	}
}

// sitesWalk is a walk of pid (0: the program) as sites.Analyze takes it:
// its arenas and unexplained ranges, its time on the library's clock.
func sitesWalk(at string, pid int, snap *schema.Snapshot, startMono uint64) sites.Walk {
	var brk, arenas int64
	for _, part := range snap.Reconciliation.Parts {
		switch part.Name {
		case "c.malloc.brk":
			brk = part.Bytes
		case "c.malloc.arenas":
			arenas = part.Bytes
		}
	}
	var heaps []sites.WalkHeap
	for _, h := range snap.Reconciliation.MallocHeaps {
		heaps = append(heaps, sites.WalkHeap{Start: h.StartAddr, ResidentBytes: h.ResidentBytes, Arena: h.ArenaAddr})
	}
	var unexplained []sites.WalkRange
	for _, u := range snap.Reconciliation.UnexplainedAll {
		unexplained = append(unexplained, sites.WalkRange{Start: u.Start, End: u.End, ResidentBytes: u.ResidentBytes})
	}
	return sites.Walk{PID: pid, At: at, AtMs: snap.TMs, MonoNs: startMono + uint64(snap.TMs*1e6), Ns: uint64(snap.WalkMs * 1e6), BrkBytes: brk, ArenasBytes: arenas,
		Heaps: heaps, Unexplained: unexplained}
}
