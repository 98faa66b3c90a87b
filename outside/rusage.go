package outside

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"memprobe/instrument/procfs"
	"memprobe/schema"
)

// Sources of schema.Process.RusageSource.
const (
	rusageWait4 = schema.RusageWait4
	rusageProc  = schema.RusageProc
)

// userHZ is the unit of /proc/PID/stat's times (USER_HZ, clock ticks):
// 100 on every Linux architecture the probe builds for (x86-64 and
// arm64 fix it, whatever the kernel's own HZ).
const userHZ = 100

// counters are the figures of /usr/bin/time -v that the kernel keeps per
// process: CPU time, faults, context switches.
type counters struct {
	userMs, systemMs           float64
	minFlt, majFlt             uint64
	volSwitches, involSwitches uint64
}

// fromRusage is what wait4's rusage says of a program and the
// descendants it waited for.
func fromRusage(ru *syscall.Rusage) counters {
	return counters{
		userMs: ms64(time.Duration(ru.Utime.Nano())), systemMs: ms64(time.Duration(ru.Stime.Nano())),
		minFlt: uint64(ru.Minflt), majFlt: uint64(ru.Majflt),
		volSwitches: uint64(ru.Nvcsw), involSwitches: uint64(ru.Nivcsw),
	}
}

// readCounters reads a live process's own counters: minflt, majflt,
// utime and stime of /proc/PID/stat (the whole thread group's, exited
// threads included), and the voluntary and nonvoluntary context switches
// of every live thread's status (the process's status counts its main
// thread only). ok is false when stat cannot be read (the process is
// gone).
func readCounters(fsys procfs.FS, pid int) (c counters, ok bool) {
	f := procfs.StatFields(fsys.Path(pid, "stat"))
	// f[0] is field 3: minflt is field 10, majflt 12, utime 14, stime 15.
	if len(f) < 13 {
		return c, false
	}
	num := func(i int) uint64 { n, _ := strconv.ParseUint(f[i], 10, 64); return n }
	c.minFlt, c.majFlt = num(10-3), num(12-3)
	c.userMs = float64(num(14-3)) * 1000 / userHZ
	c.systemMs = float64(num(15-3)) * 1000 / userHZ
	tasks, _ := os.ReadDir(fsys.Path(pid, "task"))
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join(fsys.Path(pid, "task"), t.Name(), "status"))
		if err != nil {
			continue // the thread exited meanwhile
		}
		c.volSwitches += statusField(b, "voluntary_ctxt_switches:")
		c.involSwitches += statusField(b, "nonvoluntary_ctxt_switches:")
	}
	return c, true
}

// statusField is the number after key at the start of a line of a
// status file; 0 when absent.
func statusField(b []byte, key string) uint64 {
	i := bytes.Index(b, []byte("\n"+key))
	if i < 0 {
		return 0
	}
	rest := b[i+1+len(key):]
	if j := bytes.IndexByte(rest, '\n'); j >= 0 {
		rest = rest[:j]
	}
	n, _ := strconv.ParseUint(string(bytes.TrimSpace(rest)), 10, 64)
	return n
}

// set writes c into p, from source.
func (c counters) set(p *schema.Process, source string) {
	p.RusageSource = source
	p.RusageUserMs, p.RusageSystemMs = c.userMs, c.systemMs
	p.RusageMinorFaults, p.RusageMajorFaults = c.minFlt, c.majFlt
	p.RusageVoluntaryContextSwitches, p.RusageInvoluntaryContextSwitches = c.volSwitches, c.involSwitches
}
