package kernels

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// ptxasPath is NVIDIA's PTX assembler: $MEMPROBE_PTXAS, else ptxas on the
// PATH, else "" (the caller skips). scripts/fetch-ptxas.sh fetches one from
// Debian without installing the CUDA toolkit; .ci/run does that.
func ptxasPath() string {
	if p := os.Getenv("MEMPROBE_PTXAS"); p != "" {
		return p
	}
	p, _ := exec.LookPath("ptxas")
	return p
}

// ptxasReport is what ptxas -v says of the one entry for one architecture.
type ptxasReport struct {
	registers, sharedBytes, stackBytes, spillStores, spillLoads int
}

var (
	ptxasUsed  = regexp.MustCompile(`Used (\d+) registers(?:, (\d+) bytes smem)?`)
	ptxasStack = regexp.MustCompile(`(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads`)
)

func parsePTXASReport(out string) (ptxasReport, bool) {
	var r ptxasReport
	u := ptxasUsed.FindStringSubmatch(out)
	s := ptxasStack.FindStringSubmatch(out)
	if u == nil || s == nil {
		return r, false
	}
	r.registers, _ = strconv.Atoi(u[1])
	if u[2] != "" {
		r.sharedBytes, _ = strconv.Atoi(u[2])
	}
	r.stackBytes, _ = strconv.Atoi(s[1])
	r.spillStores, _ = strconv.Atoi(s[2])
	r.spillLoads, _ = strconv.Atoi(s[3])
	return r, true
}

// The PTX must assemble to machine code for the oldest GPU it targets
// (sm_75), an A100 (sm_80) and the H100/H200 this project is lent (sm_90):
// what the driver's JIT does at cuModuleLoadData, done here by the same
// assembler, so a module the driver would refuse fails on every machine
// rather than on the first GPU. Beyond assembling: no spills and no stack
// (the kernel's loops keep everything in registers), few enough registers
// that a block of SoftmaxSampleBlock threads fits one SM's 64 Ki registers
// and a warp scheduler (≤ 255 per thread), and the shared arrays within
// the 48 KiB a launch gets without opting in.
func TestPTXAssembles(t *testing.T) {
	ptxas := ptxasPath()
	if ptxas == "" {
		t.Skip("no ptxas (set MEMPROBE_PTXAS, or run scripts/fetch-ptxas.sh DIR and point MEMPROBE_PTXAS at DIR/ptxas)")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "softmax_sample.ptx")
	if err := os.WriteFile(src, []byte(SoftmaxSamplePTX), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, arch := range []string{"sm_75", "sm_80", "sm_90"} {
		out, err := exec.Command(ptxas, "-arch="+arch, "-v", "-o", filepath.Join(dir, arch+".cubin"), src).CombinedOutput()
		if err != nil {
			t.Errorf("ptxas -arch=%s: %v\n%s", arch, err, out)
			continue
		}
		r, ok := parsePTXASReport(string(out))
		if !ok {
			t.Errorf("ptxas -arch=%s -v: no register and stack report in\n%s", arch, out)
			continue
		}
		t.Logf("%s: %d registers, %d bytes shared, %d bytes stack", arch, r.registers, r.sharedBytes, r.stackBytes)
		if r.spillStores != 0 || r.spillLoads != 0 || r.stackBytes != 0 {
			t.Errorf("%s: %d bytes stack, %d bytes spill stores, %d spill loads; want none", arch, r.stackBytes, r.spillStores, r.spillLoads)
		}
		if r.registers > 255 || r.registers*SoftmaxSampleBlock > 64*1024 {
			t.Errorf("%s: %d registers per thread: a block of %d threads does not fit an SM", arch, r.registers, SoftmaxSampleBlock)
		}
		if r.sharedBytes > 48*1024 {
			t.Errorf("%s: %d bytes of static shared memory, over the 48 KiB a launch gets", arch, r.sharedBytes)
		}
	}
}

// The parser must read what ptxas prints, with and without shared memory.
func TestParsePTXASReport(t *testing.T) {
	out := `ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'softmax_sample' for 'sm_75'
ptxas info    : Function properties for softmax_sample
    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 42 registers, 2048 bytes smem, 408 bytes cmem[0]
`
	r, ok := parsePTXASReport(out)
	if want := (ptxasReport{42, 2048, 8, 4, 12}); !ok || r != want {
		t.Errorf("parse = %+v, %v; want %+v", r, ok, want)
	}
	r, ok = parsePTXASReport("    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\nptxas info    : Used 32 registers\n")
	if want := (ptxasReport{registers: 32}); !ok || r != want {
		t.Errorf("parse without smem = %+v, %v; want %+v", r, ok, want)
	}
	if _, ok := parsePTXASReport("ptxas fatal   : Unresolved extern function 'foo'"); ok {
		t.Error("parsed a report from an error")
	}
}
