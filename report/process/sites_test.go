package process

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"memprobe/internal/golden"
	"memprobe/internal/table"
	"memprobe/schema"
)

// TestRenderSitesGolden: the sites section of the report, text and
// markdown, from a made-up result: sampled, with every table and the
// arena split; go test -update rewrites it.
func TestRenderSitesGolden(t *testing.T) {
	st := &schema.Sites{RateBytes: 524288, PID: 4242, PeakInUseBytes: 300 << 20, PeakInUseObjects: 120000, PeakAtMs: 1500,
		PeakSource: "counted", ExitInUseBytes: 12 << 20, ExitInUseObjects: 40, AllocObjects: 9000000, AllocBytes: 20 << 30,
		SampledObjects: 41000, TemporaryObjects: 2500000,
		TopPeak: []schema.Site{
			{Function: "load_batch", File: "src/data.c", Line: 88, Object: "/opt/app", Bytes: 256 << 20, Objects: 64, Stack: []string{"load_batch", "train_step", "main", "__libc_start_main"}},
			{Function: "shapes::Grid<double>::Grid(unsigned long)", Object: "/opt/app", Bytes: 44 << 20, Objects: 119936, Stack: []string{"shapes::Grid<double>::Grid(unsigned long)"}},
			{Function: "xmalloc", File: "src/util.c", Line: 20, Object: "/opt/app", Bytes: 40 << 20, Objects: 5000, Stack: []string{"xmalloc", "parse_row", "load_file", "main"}, Stacks: 12, StackSharePct: 38.2},
		},
		TopExit: []schema.Site{{Function: "cache_put", File: "src/cache.c", Line: 12, Object: "/opt/app", Bytes: 12 << 20, Objects: 40, Stack: []string{"cache_put", "main"}}},
		Processes: []schema.SitesProcess{
			{PID: 4242, PPID: 4200, Image: 0, Executable: "/usr/bin/dash", PeakInUseBytes: 40 << 10, ExitInUseBytes: 8 << 10, AllocObjects: 30, Ended: "execve"},
			{PID: 4242, PPID: 4200, Image: 1, Executable: "/opt/app", PeakInUseBytes: 300 << 20, ExitInUseBytes: 12 << 20, AllocObjects: 9000000, Ended: "exit"},
			{PID: 4250, PPID: 4242, Image: 0, Executable: "/opt/app", PeakInUseBytes: 2 << 20, ExitInUseBytes: 0, AllocObjects: 1200, Ended: "unflushed"},
		},
		TopTemporary: []schema.Site{{Function: "fmt_row", File: "src/log.c", Line: 30, Object: "/opt/app", Bytes: 1 << 30, Objects: 2400000, Temporary: 2400000, Stack: []string{"fmt_row", "log_step", "main"}}},
		Fragmentation: &schema.SitesFragmentation{At: "peak", AtMs: 1600, ArenaResidentBytes: 400 << 20, InUseBytes: 100 << 20, InUseSEBytes: 6 << 20, FreeResidentBytes: 300 << 20, FreeResidentPct: 75,
			Arenas: []schema.SitesArena{{Arena: "main", ResidentBytes: 300 << 20, InUseBytes: 60 << 20, InUseSEBytes: 4 << 20, FreeResidentBytes: 240 << 20}, {Arena: "others", ResidentBytes: 100 << 20, InUseBytes: 40 << 20, InUseSEBytes: 4 << 20, FreeResidentBytes: 60 << 20}},
			Heaps:  []schema.SitesHeap{{Heap: "[heap]", Arena: "main", ResidentBytes: 300 << 20, InUseBytes: 60 << 20, InUseSEBytes: 4 << 20, FreeResidentBytes: 240 << 20, FreeResidentPct: 80}}},
		Unexplained: &schema.SitesUnexplained{At: "peak", AtMs: 1600, UnexplainedBytes: 140 << 20, MappedBytes: 130 << 20, Estimated: true,
			Sites: []schema.SitesMapping{
				{Function: "_PyObject_ArenaMmap", File: "Objects/obmalloc.c", Line: 152, Stack: []string{"_PyObject_ArenaMmap", "new_arena", "allocate_from_new_pool", "pymalloc_alloc"}, Mappings: 128, ReservedBytes: 128 << 20, ResidentBytes: 126 << 20},
				{Function: "blas_memory_alloc", Stack: []string{"blas_memory_alloc", "blas_thread_server"}, Mappings: 2, ReservedBytes: 256 << 20, ResidentBytes: 4 << 20},
			}},
	}
	// Ten heaps of the other arenas (two heaps an arena), 10 MiB each
	// but one of 256 KiB where no block was sampled (its free share is
	// not measured at the rate); the last three are summed in one row.
	for i := range 10 {
		res, use, se := int64(10<<20), int64(4<<20), int64(2<<20)
		switch i {
		case 0:
			use, se = 1<<20, 1<<20
		case 1:
			use = 7 << 20
		case 2:
			use = 12 << 20 // more than resident: sampled, or pages never written
		case 3:
			res, use, se = 256<<10, 0, 512<<10
		}
		st.Fragmentation.Heaps = append(st.Fragmentation.Heaps, schema.SitesHeap{Heap: fmt.Sprintf("%#x", 0x7f0000000000+uint64(i)<<26),
			Arena: fmt.Sprintf("%#x", 0x7f0000000030+uint64(i/2)<<27), ResidentBytes: res, InUseBytes: use, InUseSEBytes: se, FreeResidentBytes: max(res-use, 0),
			FreeResidentPct: 100 * float64(max(res-use, 0)) / float64(res)})
	}
	for _, f := range []table.Format{table.Text, table.Markdown} {
		var b bytes.Buffer
		e := &errWriter{w: &b, md: f == table.Markdown}
		heading := func(s string) { e.printf("\n%s\n", s) }
		render := func(tb *table.Table) {
			e.block()
			if e.err == nil {
				e.err = tb.Render(&b, f)
			}
		}
		renderSites(e, heading, render, st)
		if e.err != nil {
			t.Fatal(e.err)
		}
		golden.Check(t, "sites_"+string(f)+".golden", b.Bytes())
	}
}

// TestRenderFragmentationUnmeasured: g++'s driver at the default rate,
// whose 56 KiB brk heap held 169 KiB of blocks in use at exit of which
// none was sampled: its split is not measured at the rate, where the
// report read "in use 0 B, free 100.0 %". At rate 1 it is.
func TestRenderFragmentationUnmeasured(t *testing.T) {
	f := &schema.SitesFragmentation{At: "end", AtMs: 560, ArenaResidentBytes: 56 << 10, InUseSEBytes: 512 << 10, FreeResidentBytes: 56 << 10, FreeResidentPct: 100,
		Heaps: []schema.SitesHeap{{Heap: "[heap]", Arena: "main", ResidentBytes: 56 << 10, InUseSEBytes: 512 << 10, FreeResidentBytes: 56 << 10, FreeResidentPct: 100}}}
	out := func(rate int64) string {
		var b bytes.Buffer
		e := &errWriter{w: &b}
		renderFragmentation(e, func(tb *table.Table) { e.block(); tb.Render(&b, table.Text) }, f, rate, "")
		return b.String()
	}
	sampled := out(512 << 10)
	t.Logf("sampled:\n%s", sampled)
	if strings.Contains(sampled, "100.0") || !strings.Contains(sampled, "free but resident: not measured: the arenas' 56 KiB resident held too few sampled blocks") {
		t.Errorf("sampled, no block in use sampled: want the free share not measured, not 100 %%:\n%s", sampled)
	}
	if exact := out(1); !strings.Contains(exact, "free but resident: 100.0 % of the arenas'") {
		t.Errorf("rate 1: want 100.0 %% free:\n%s", exact)
	}
}

// TestRenderSitesDriver: g++ under --sites at the default rate. The
// headline is the driver's, 169 KiB in use of which no block was
// sampled, so the blocks in use are unknown, not "0 blocks" (as the
// report said); and the memory is its child cc1plus's, 70 MiB, which the
// report now names with the pprof command that lists its sites (it was
// only a row of the images' table, under "in use at the peak: none"),
// and lists its top sites at its peak (the pprof command was all).
func TestRenderSitesDriver(t *testing.T) {
	st := &schema.Sites{RateBytes: 524288, PID: 16314, PeakInUseBytes: 173056, PeakAtMs: 793, PeakSource: "counted",
		ExitInUseBytes: 173056, AllocObjects: 261, AllocBytes: 191898,
		Profiles: []schema.SitesProfile{{Kind: schema.SitesPeak, Path: "gx/sites-peak.pb.gz"}},
		Processes: []schema.SitesProcess{
			{PID: 16314, PPID: 16304, Executable: "/usr/bin/x86_64-linux-gnu-g++-12", PeakInUseBytes: 173056, ExitInUseBytes: 173056, AllocObjects: 261, Ended: "exit"},
			{PID: 16315, PPID: 16314, Executable: "/usr/lib/gcc/x86_64-linux-gnu/12/cc1plus", PeakInUseBytes: 70 << 20, ExitInUseBytes: 67 << 20, AllocObjects: 697431, Ended: "exit",
				TopPeak: []schema.Site{{Function: "ggc_internal_alloc(unsigned long, void (*)(void*), unsigned long, unsigned long)", Bytes: 60 << 20, BytesSE: 2 << 20, Objects: 40, Mapped: true,
					Stack: []string{"ggc_internal_alloc(unsigned long, void (*)(void*), unsigned long, unsigned long)", "ggc_realloc(void*, unsigned long)", "c_parse_file()"}}}},
			{PID: 16319, PPID: 16314, Executable: "/usr/bin/x86_64-linux-gnu-as", PeakInUseBytes: 414 << 10, ExitInUseBytes: 29 << 10, AllocObjects: 819, Ended: "exit"},
		},
	}
	var b bytes.Buffer
	e := &errWriter{w: &b}
	renderSites(e, func(s string) { e.printf("\n%s\n", s) }, func(tb *table.Table) { e.block(); tb.Render(&b, table.Text) }, st)
	out := b.String()
	for _, want := range []string{
		"in use at the peak 169 KiB (at 0.793 s, every block counted; none of its blocks sampled); at exit 169 KiB (none of its blocks sampled)",
		"the most in use at a peak was in cc1plus (pid 16315): 70 MiB, against the program's 169 KiB; all its sites: go tool pprof -top -tagfocus=pid=16315 gx/sites-peak.pb.gz",
		"in use at the peak of cc1plus, pid 16315 (sampled",
		"60 MiB       2 MiB      40          0  [mmap] ggc_internal_alloc ← ggc_realloc ← c_parse_file",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "in 0 blocks") {
		t.Errorf("report says 0 blocks of bytes in use:\n%s", out)
	}
}

// TestRenderSitesManyImages: pyenv's python3 is a shell shim that execs
// env and bash a dozen deep and forks more: 76 images, of which the
// report listed every one. It lists ten, the program's own first and
// then the largest, and sums the rest in one row.
func TestRenderSitesManyImages(t *testing.T) {
	st := &schema.Sites{RateBytes: 524288, PID: 100, PeakInUseBytes: 119 << 20, PeakSource: "counted"}
	for i := range 3 {
		st.Processes = append(st.Processes, schema.SitesProcess{PID: 100, Image: i, Executable: "/usr/bin/env", PeakInUseBytes: 13 << 10, AllocObjects: 201, Ended: "execve"})
	}
	st.Processes = append(st.Processes, schema.SitesProcess{PID: 100, Image: 3, Executable: "/usr/bin/python3.11", PeakInUseBytes: 119 << 20, AllocObjects: 3875, Ended: "exit"})
	for i := range 20 {
		st.Processes = append(st.Processes, schema.SitesProcess{PID: 200 + i, PPID: 100, Executable: "/usr/bin/bash", PeakInUseBytes: int64(80+i) << 10, ExitInUseBytes: 1 << 10, AllocObjects: 100, Ended: "exit"})
	}
	var b bytes.Buffer
	e := &errWriter{w: &b}
	renderSites(e, func(s string) { e.printf("\n%s\n", s) }, func(tb *table.Table) { e.block(); tb.Render(&b, table.Text) }, st)
	out := b.String()
	rows := strings.Count(out, "/usr/bin/")
	if rows != 10 || !strings.Contains(out, "python3.11") || !strings.Contains(out, "14 more (bash): the largest peak, the sums") ||
		!strings.Contains(out, "99 KiB") || strings.Contains(out, "80.0 KiB") {
		t.Errorf("want 10 images (the program's 4, then the 6 largest bashes: 99 to 94 KiB) and 14 more summed:\n%s", out)
	}
}
