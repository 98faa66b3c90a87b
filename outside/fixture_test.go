package outside

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"memprobe/instrument/procfs"
	"memprobe/instrument/reconcile"
	"memprobe/internal/golden"
	"memprobe/internal/table"
	"memprobe/report/process"
	"memprobe/schema"
)

// fixture reconciles testdata/smaps_gpu (a hand-made C program with an
// NVIDIA driver: see the mappings' comment in the test) as a walk would.
func fixture(t *testing.T, isGo bool) (*schema.Snapshot, []procfs.Mapping) {
	t.Helper()
	ms, err := procfs.ReadSmapsFile("testdata/smaps_gpu")
	if err != nil {
		t.Fatal(err)
	}
	var st procfs.Status
	for _, m := range ms {
		st.VmRSSBytes += m.RssBytes
		st.VmSizeBytes += m.SizeBytes
	}
	st.VmHWMBytes, st.Threads = st.VmRSSBytes, 3
	rec := reconcile.Compute(reconcile.Input{Status: st, Mappings: ms, ThreadStackBytes: 8 << 20})
	s := &schema.Snapshot{Threads: 3, VmHWMBytes: st.VmHWMBytes, ThreadStackDefaultBytes: 8 << 20, CPUs: 4, GlibcArenaLimit: 32,
		AnonBySize: sizeClasses(ms)}
	s.GPUMappings = outsideParts(&rec, ms, isGo)
	s.Reconciliation = rec
	return s, ms
}

func part(r reconcile.Reconciliation, name string) (reconcile.Part, bool) {
	for _, p := range r.Parts {
		if p.Name == name {
			return p, true
		}
	}
	return reconcile.Part{}, false
}

// checkSums: the parts and the unexplained remainder add up to RSS and VSZ.
func checkSums(t *testing.T, r reconcile.Reconciliation) {
	t.Helper()
	var res, resv int64
	for _, p := range r.Parts {
		res += p.Bytes
		resv += p.ReservedBytes
	}
	if res+r.UnexplainedBytes != r.RSSBytes || resv+r.UnexplainedReservedBytes != r.VSZBytes {
		t.Errorf("parts %d + unexplained %d != RSS %d, or reserved %d + %d != VSZ %d",
			res, r.UnexplainedBytes, r.RSSBytes, resv, r.UnexplainedReservedBytes, r.VSZBytes)
	}
}

// TestOutsideParts: by hand, from testdata/smaps_gpu: the NVIDIA mappings
// (2 MiB + 64 MiB reserved, 64 KiB + 1 MiB resident) leave file.mapped for
// gpu.driver; the arena (8 MiB head, 64 MiB) and both stacks (8 MiB each,
// 16 + 24 KiB resident, 4 KiB guards) are found; the 32 MiB anonymous
// mapping is unexplained for a C program and go.runtime.anon for a Go one;
// the inside-only parts are left out.
func TestOutsideParts(t *testing.T) {
	s, _ := fixture(t, false)
	r := s.Reconciliation
	checkSums(t, r)
	want := map[string][3]int64{ // resident, reserved, count
		"gpu.driver":      {1088 << 10, 66 << 20, 2},
		"c.malloc.arenas": {6 << 20, 64 << 20, 1},
		"stacks.threads":  {40 << 10, 16<<20 + 8<<10, 2},
		"c.malloc.brk":    {2 << 20, 4 << 20, 1},
		"file.mapped":     {(4 + 4 + 160 + 1024) << 10, (12 + 160 + 1620 + 16) << 10, 6},
	}
	for name, w := range want {
		p, ok := part(r, name)
		if !ok || p.Bytes != w[0] || p.ReservedBytes != w[1] || int64(p.Count) != w[2] {
			t.Errorf("%s: %d B resident, %d B reserved, count %d; want %v", name, p.Bytes, p.ReservedBytes, p.Count, w)
		}
	}
	for name := range insideOnly {
		if _, ok := part(r, name); ok {
			t.Errorf("inside-only part %s is shown", name)
		}
	}
	if s.GPUMappings != 2 || r.UnexplainedBytes != 32<<20 || r.PthreadStacks != 2 || r.GlibcArenas != 1 {
		t.Errorf("gpu mappings %d, unexplained %d, stacks %d, arenas %d", s.GPUMappings, r.UnexplainedBytes, r.PthreadStacks, r.GlibcArenas)
	}

	g, _ := fixture(t, true)
	checkSums(t, g.Reconciliation)
	if p, ok := part(g.Reconciliation, "go.runtime.anon"); !ok || p.Bytes != 32<<20 || g.Reconciliation.UnexplainedBytes != 0 {
		t.Errorf("Go program: go.runtime.anon %d B, unexplained %d B; want 32 MiB and 0", p.Bytes, g.Reconciliation.UnexplainedBytes)
	}
}

func TestSizeClasses(t *testing.T) {
	_, ms := fixture(t, false)
	got := map[string]int{}
	for _, c := range sizeClasses(ms) {
		got[c.Class] = c.Mappings
	}
	// Anonymous: arena head 8 MiB, tail 56 MiB, 32 MiB, two 4 KiB guards,
	// two 8 MiB stacks.
	want := map[string]int{"< 64 KiB": 2, "64 KiB to 1 MiB": 0, "1 to 8 MiB": 0, "8 to 64 MiB": 5, ">= 64 MiB": 0}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %d mappings, want %d", k, got[k], v)
		}
	}
}

func TestProcParsers(t *testing.T) {
	for s, want := range map[string]int{"0": 1, "0-3": 4, "0-3,8-11": 8, "0,2,4": 3} {
		if n, err := countCPUList(s); err != nil || n != want {
			t.Errorf("countCPUList(%q) = %d, %v; want %d", s, n, err, want)
		}
	}
	if _, err := countCPUList("3-1"); err == nil {
		t.Error("a descending range is accepted")
	}
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	limits := "Limit                     Soft Limit           Hard Limit           Units     \nMax stack size            %s            unlimited            bytes     \n"
	for soft, want := range map[string]int64{"8388608": 8 << 20, "unlimited": 2 << 20, "1048576": 1 << 20} {
		if got := stackLimit(write("limits", fmtS(limits, soft))); got != want {
			t.Errorf("stack limit %s: %d, want %d", soft, got, want)
		}
	}
	stat := "123 (a (b) c) S 1 123 123 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 3 0 100 1000000 200 18446744073709551615 1 1 0 140737488346112 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
	if sp := kstkesp(write("stat", stat)); sp != 140737488346112 {
		t.Errorf("kstkesp = %d, want 140737488346112", sp)
	}
	if f := procfs.StatFields(write("stat2", stat)); len(f) < 2 || f[0] != "S" || f[1] != "1" {
		t.Errorf("StatFields = %q, want state S and parent 1 after a command holding parentheses", f)
	}
	if v := environ(write("environ", "A=1\x00MALLOC_ARENA_MAX=2\x00B=3\x00"), "MALLOC_ARENA_MAX"); v != "2" {
		t.Errorf("MALLOC_ARENA_MAX = %q, want 2", v)
	}
}

func fmtS(format, s string) string {
	return string(bytes.Replace([]byte(format), []byte("%s"), []byte(s), 1))
}

// TestRenderGolden: the report of a fixed result (the fixture's walk,
// a made-up timeline) in text and markdown; go test -update rewrites it.
func TestRenderGolden(t *testing.T) {
	s, _ := fixture(t, false)
	s.TMs, s.WalkMs, s.MallocArenaMax = 1500, 2.5, ""
	code, pct := 0, 0.4
	p := &schema.Process{
		Mode: schema.ModeExec, Command: []string{"./app", "--train"}, PID: 4242, Exited: true, ExitCode: &code,
		DurationMs: 40000, IntervalMs: 10, SmapsEveryMs: 1000,
		Timeline: schema.TimelineSummary{Samples: 4000, StartRSSBytes: 2 << 20, PeakRSSBytes: uint64(s.Reconciliation.RSSBytes),
			FinalRSSBytes: uint64(s.Reconciliation.RSSBytes), PeakVSZBytes: uint64(s.Reconciliation.VSZBytes),
			FinalVSZBytes: uint64(s.Reconciliation.VSZBytes), PeakPSSBytes: 40 << 20, PeakRssAnonBytes: 40 << 20,
			PeakRssFileBytes: 2 << 20, PeakThreads: 3, GrowthBytes: int64(s.Reconciliation.RSSBytes) - 2<<20, PeakAtMs: 39000,
			LastQuarterGrowthBytes: 10 << 20},
		VmHWMBytes: uint64(s.Reconciliation.RSSBytes), RusageMaxRSSBytes: uint64(s.Reconciliation.RSSBytes) - 4096*40,
		PeakAgreementPct: &pct, AtPeak: s, End: s, Walks: 3, Children: []schema.Child{}, Files: []string{},
		RusageSource: rusageWait4, RusageUserMs: 38500, RusageSystemMs: 1250, RusageMinorFaults: 12345, RusageMajorFaults: 7,
		RusageVoluntaryContextSwitches: 420, RusageInvoluntaryContextSwitches: 96,
		Overhead: schema.Overhead{SamplerCostMs: 120, WalkCostMs: 7.5, ProbeCPUMs: 150, ProbeCPUPct: 0.375, AnalysisCPUMs: 42.5},
	}
	util, ownSM, ownMem := 12.5, 8.0, 3.0
	p.GPU = &schema.ProcessGPU{IntervalMs: 100, Samples: 400, PeakBytes: 1536 << 20, FinalBytes: 1024 << 20, MeanUtilPct: &util,
		MeanProcessSMUtilPct: &ownSM, MeanProcessMemUtilPct: &ownMem, ProcessUtilNoSampleReadings: 150,
		Timeline: []schema.GPUSample{}}
	p.Diagnosis = process.Diagnose(&schema.Result{Process: p}, false)
	r := &schema.Result{Kind: schema.KindProcess, Process: p, Warnings: []string{}}
	for _, f := range []table.Format{table.Text, table.Markdown} {
		var b bytes.Buffer
		if err := process.Render(&b, r, f); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, "report_"+string(f)+".golden", b.Bytes())
	}
}
