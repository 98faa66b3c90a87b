package schema

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"

	"golang.org/x/sys/cpu"
)

// Environment is the build and the machine a job ran on: what must be the
// same, or at least known, before two results are compared.
type Environment struct {
	// VCSRevision, VCSTime and VCSModified are the build's vcs.revision,
	// vcs.time and vcs.modified (runtime/debug.ReadBuildInfo). They are
	// empty and false when the binary was not built from a repository
	// checkout, or was built with -buildvcs=false (go run and go test
	// do not stamp them either).
	VCSRevision string `json:"vcs_revision"`
	VCSTime     string `json:"vcs_time"`
	VCSModified bool   `json:"vcs_modified"` // uncommitted changes in the checkout
	GoVersion   string `json:"go_version"`
	GOOS        string `json:"goos"`
	GOARCH      string `json:"goarch"`
	// CgoEnabled is the build's CGO_ENABLED; BuildTags its -tags (never
	// nil; empty without tags or build information).
	CgoEnabled bool     `json:"cgo_enabled"`
	BuildTags  []string `json:"build_tags"`
	// KernelRelease is uname -r (/proc/sys/kernel/osrelease); "" off Linux.
	KernelRelease string `json:"kernel_release"`
	Hostname      string `json:"hostname"`
	// CPUModel is /proc/cpuinfo's "model name" of the first CPU ("" when
	// unknown).
	CPUModel string `json:"cpu_model"`
	// CPUFlags are the instruction sets that decide which GEMM kernels
	// run, those this CPU and OS support, in this order: avx2, fma,
	// avx512f, avx512bw, amx-tile (golang.org/x/sys/cpu). Never nil.
	CPUFlags     []string `json:"cpu_flags"`
	LogicalCores int      `json:"logical_cores"` // runtime.NumCPU: CPUs this process may run on
	GOMAXPROCS   int      `json:"gomaxprocs"`
	// MemTotalBytes is /proc/meminfo's MemTotal (0 when unknown).
	MemTotalBytes uint64 `json:"mem_total_bytes"`
	// OpenBLASConfig is openblas_get_config() in a build with the
	// openblas tag ("" otherwise); the trainer's side fills it
	// (gemm.OpenBLASConfig), CurrentEnvironment cannot.
	OpenBLASConfig string `json:"openblas_config"`
	// OpenBLASCoretype is the OPENBLAS_CORETYPE environment variable,
	// which overrides OpenBLAS's choice of kernels ("" when unset).
	OpenBLASCoretype string `json:"openblas_coretype"`
}

// CurrentEnvironment gathers the environment of this process: everything
// but OpenBLASConfig, which needs the trainer's GEMM package.
func CurrentEnvironment() Environment { return environment("/") }

// environment reads /proc under root (a fixture tree in tests).
func environment(root string) Environment {
	e := Environment{
		GoVersion: runtime.Version(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH,
		LogicalCores: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0),
		BuildTags: []string{}, CPUFlags: cpuFlags(),
		OpenBLASCoretype: os.Getenv("OPENBLAS_CORETYPE"),
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		e.setBuild(bi)
	}
	e.Hostname, _ = os.Hostname()
	proc := filepath.Join(root, "proc")
	if b, err := os.ReadFile(filepath.Join(proc, "sys/kernel/osrelease")); err == nil {
		e.KernelRelease = strings.TrimSpace(string(b))
	}
	e.CPUModel = cpuModel(filepath.Join(proc, "cpuinfo"))
	e.MemTotalBytes = memTotal(filepath.Join(proc, "meminfo"))
	return e
}

// setBuild copies what the Go toolchain stamped into the binary.
func (e *Environment) setBuild(bi *debug.BuildInfo) {
	if bi.GoVersion != "" {
		e.GoVersion = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			e.VCSRevision = s.Value
		case "vcs.time":
			e.VCSTime = s.Value
		case "vcs.modified":
			e.VCSModified = s.Value == "true"
		case "CGO_ENABLED":
			e.CgoEnabled = s.Value == "1"
		case "-tags":
			for _, t := range strings.Split(s.Value, ",") {
				if t = strings.TrimSpace(t); t != "" {
					e.BuildTags = append(e.BuildTags, t)
				}
			}
		}
	}
}

// cpuFlags lists the instruction sets the GEMM kernels care about that
// this CPU has and the OS has enabled.
func cpuFlags() []string {
	flags := []string{}
	for _, f := range []struct {
		name string
		has  bool
	}{
		{"avx2", cpu.X86.HasAVX2}, {"fma", cpu.X86.HasFMA},
		{"avx512f", cpu.X86.HasAVX512F}, {"avx512bw", cpu.X86.HasAVX512BW},
		{"amx-tile", cpu.X86.HasAMXTile},
	} {
		if f.has {
			flags = append(flags, f.name)
		}
	}
	return flags
}

// cpuModel is the first "model name" in a cpuinfo file.
func cpuModel(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// memTotal is MemTotal from a meminfo file, in bytes (the file says kB,
// meaning KiB).
func memTotal(path string) uint64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return 0
		}
		n, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return 0
		}
		if len(f) > 1 && f[1] == "kB" {
			n *= 1024
		}
		return n
	}
	return 0
}
