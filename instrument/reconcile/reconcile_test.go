package reconcile

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"memprobe/instrument/procfs"
	"memprobe/instrument/rtstats"
	"memprobe/internal/golden"
	"memprobe/ledger"
	"memprobe/report"
)

const (
	KiB = 1 << 10
	MiB = 1 << 20
)

// fixture is a cgo trainer process described by testdata/smaps_cgo (made
// by hand; every shape the classifier knows, and 48 MiB of anonymous
// memory at 0x7f0010000000 that no source claims):
//
//	0x400000..       the binary (text, data with one written page, .bss 32 MiB)
//	0x3000000        [heap]
//	0x1a0000000000   Go's arena: 16 MiB PROT_NONE, 128 MiB rw (120 MiB resident), 48 MiB PROT_NONE
//	0x7f0000000000   a glibc arena: 132 KiB head, PROT_NONE tail to 64 MiB
//	0x7f0010000000   48 MiB resident, unclaimed
//	0x7f0020000000   two 1 MiB worker stacks with 4 KiB guards (registered)
//	0x7f0030000000   an 8 MiB stack holding a blocked thread's stack pointer
//	0x7f0040000000   an 8 MiB stack merged with 32 MiB above it (2 MiB resident there)
//	0x7f0050000000   Go metadata: 2.5 MiB (712 KiB resident), a 4 KiB island below a 128 MiB reservation
//	0x7f0060000000   1 MiB of /dev/shm
//	0x7f0080000000   libc and its .bss, [vvar], [vdso]
//	0x7ffd00000000   [stack]
func fixture(t *testing.T) Input {
	t.Helper()
	ms, err := procfs.ReadSmapsFile(filepath.Join("testdata", "smaps_cgo"))
	if err != nil {
		t.Fatal(err)
	}
	return Input{
		Status: procfs.Status{
			VmRSSBytes: 178204 * KiB, RssAnonBytes: 174000 * KiB, RssFileBytes: 3180 * KiB, RssShmemBytes: 1024 * KiB,
			VmSizeBytes: 532860 * KiB, Threads: 7,
		},
		Mappings: ms,
		ThreadSPs: []procfs.ThreadSP{
			{TID: 100, SP: 0x7ffd00020f00}, // main, on [stack]
			{TID: 101, SP: 0x7f00307ffd00}, // a runtime thread on its pthread stack
			{TID: 102, SP: 0x1a0002000000}, // on a goroutine stack
			{TID: 103},                     // running
			{TID: 104, SP: 0x7f00201fff00}, // a worker
			{TID: 105, SP: 0xdead00000000}, // in no mapping
		},
		Resident: func(lo, hi uint64) (int64, error) {
			if lo == 0x7f0040001000 && hi == 0x7f0040801000 {
				return 8 * KiB, nil
			}
			return 0, errors.New("no such range in the fixture's pagemap")
		},
		Runtime: rtstats.Snapshot{
			RuntimeThreads: 5,
			Memory: rtstats.MemoryClasses{
				HeapObjectsBytes: 110 * MiB, HeapUnusedBytes: 2 * MiB, HeapFreeBytes: 8 * MiB,
				HeapReleasedBytes: 6 * MiB, HeapStacksBytes: 1 * MiB,
				MetadataMSpanInuseBytes: 1 * MiB, MetadataOtherBytes: 2 * MiB, OtherBytes: 512 * KiB,
				TotalBytes: 130*MiB + 512*KiB,
			},
		},
		Ledger: []ledger.Entry{
			{Component: ledger.Grads, CurrentBytes: 50 * MiB},
			{Component: ledger.Params, CurrentBytes: 50 * MiB},
		},
		GoAddrs: []uint64{0x1a0001000100},
		ThreadStacks: []StackRange{
			{Lo: 0x7f0020001000, Hi: 0x7f0020101000, GuardBytes: 4 * KiB},
			{Lo: 0x7f0020102000, Hi: 0x7f0020202000, GuardBytes: 4 * KiB},
		},
		ThreadStackBytes: 8 * MiB,
		OpenFile:         files(fixtureFiles()),
	}
}

// countersOnly is a process seen without smaps.
func countersOnly() Input {
	return Input{
		Status: procfs.Status{
			VmRSSBytes: 100 * MiB, RssAnonBytes: 90 * MiB, RssFileBytes: 9 * MiB, RssShmemBytes: 1 * MiB,
			VmSizeBytes: 1200 * MiB, Threads: 10,
		},
		Runtime: rtstats.Snapshot{
			Memory: rtstats.MemoryClasses{
				HeapObjectsBytes: 50 * MiB, HeapUnusedBytes: 2 * MiB, HeapFreeBytes: 6 * MiB,
				HeapReleasedBytes: 20 * MiB, HeapStacksBytes: 1 * MiB,
				MetadataMSpanInuseBytes: 1 * MiB, MetadataOtherBytes: 3 * MiB, OtherBytes: 1 * MiB,
				TotalBytes: 84 * MiB,
			},
		},
		LedgerTotalBytes: 44 * MiB,
		Ledger: []ledger.Entry{
			{Component: ledger.DeviceBuffers, CurrentBytes: 4 * MiB},
			{Component: ledger.Grads, CurrentBytes: 20 * MiB},
			{Component: ledger.Params, CurrentBytes: 20 * MiB},
		},
		OutsideGoComponents: []string{ledger.DeviceBuffers},
	}
}

type want struct {
	resident, reserved int64
	count              int
}

func checkParts(t *testing.T, r Reconciliation, wants map[string]want) {
	t.Helper()
	got := map[string]Part{}
	for _, p := range r.Parts {
		if _, dup := got[p.Name]; dup {
			t.Errorf("part %s twice", p.Name)
		}
		got[p.Name] = p
	}
	if len(got) != len(wants) {
		t.Errorf("%d parts, want %d: %+v", len(got), len(wants), r.Parts)
	}
	for name, w := range wants {
		p, ok := got[name]
		if !ok {
			t.Errorf("no part %s", name)
			continue
		}
		if p.Bytes != w.resident || p.ReservedBytes != w.reserved || p.Count != w.count {
			t.Errorf("%s: resident %d, reserved %d, count %d; want %d, %d, %d (%s)", name,
				p.Bytes, p.ReservedBytes, p.Count, w.resident, w.reserved, w.count, p.Note)
		}
	}
}

// checkSums is a sanity check: parts + unexplained = RSS holds by
// construction (finish takes the unexplained bytes as the rest), so it
// proves nothing about the figures. A test that relies on them checks the
// unexplained bytes against what it knows: a sum by hand, a plant, or
// checkWalk.
func checkSums(t *testing.T, r Reconciliation) {
	t.Helper()
	var sum, vsum int64
	for _, p := range r.Parts {
		sum += p.Bytes
		vsum += p.ReservedBytes
		if p.Bytes < 0 || p.ReservedBytes < 0 {
			t.Errorf("part %+v is negative", p)
		}
	}
	if sum+r.UnexplainedBytes != r.RSSBytes {
		t.Errorf("parts %d + unexplained %d != RSS %d", sum, r.UnexplainedBytes, r.RSSBytes)
	}
	if vsum+r.UnexplainedReservedBytes != r.VSZBytes {
		t.Errorf("reserved %d + unexplained %d != VSZ %d", vsum, r.UnexplainedReservedBytes, r.VSZBytes)
	}
}

// checkWalk: the unexplained bytes, which finish() takes as RSS less the
// parts, are what the pieces no rule claimed hold resident by smaps, plus
// the status counters' drift from the page walk (VmRSS − Σ smaps Rss): a
// part that counts a page twice, or a page neither a part nor a piece
// holds, breaks it. Without smaps (counters only) there are no pieces.
func checkWalk(t *testing.T, r Reconciliation) {
	t.Helper()
	if r.SmapsRSSBytes == 0 {
		t.Fatalf("checkWalk on a reconciliation without smaps")
	}
	var pieces int64
	for _, p := range r.UnexplainedAll {
		pieces += p.ResidentBytes
	}
	if want := pieces + r.RSSBytes - r.SmapsRSSBytes; r.UnexplainedBytes != want {
		t.Errorf("unexplained %d B, but the %d unclaimed pieces hold %d B resident and VmRSS − Σ smaps Rss is %d B: want %d B",
			r.UnexplainedBytes, len(r.UnexplainedAll), pieces, r.RSSBytes-r.SmapsRSSBytes, want)
	}
}

// TestComputeFixture checks every part of the fixture against arithmetic
// done by hand on testdata/smaps_cgo.
func TestComputeFixture(t *testing.T) {
	r := Compute(fixture(t))
	checkSums(t, r)
	checkParts(t, r, map[string]want{
		// Heap classes 100 + 10 + 10 + 1 = 121 MiB, the arena has 120
		// MiB resident: heap free is cut by 1 MiB.
		"go.heap.objects.ledger": {100 * MiB, 100 * MiB, 0},
		"go.heap.objects.other":  {10 * MiB, 10 * MiB, 0},
		"go.heap.free":           {9 * MiB, 10 * MiB, 0},
		"go.stacks.goroutines":   {1 * MiB, 1 * MiB, 0},
		"go.heap.released":       {0, 6 * MiB, 0},
		// Arena mappings 16 + 128 + 48 = 192 MiB, less 121 + 6.
		"go.arena.other": {0, 65 * MiB, 3},
		// No mapping is named as Go's. The candidates that fit the
		// 3.5 MiB of metadata classes by size (the 4 KiB island, 712
		// KiB, and the 2 MiB resident in the 32 MiB above the merged
		// stack) are probable Go metadata, unexplained.
		"go.runtime.metadata": {0, 0, 0},
		"outside_go.ledger":   {0, 0, 0},
		"stacks.main":         {16 * KiB, 132 * KiB, 1},
		"stacks.workers":      {28 * KiB, 2*MiB + 8*KiB, 2},
		"stacks.threads":      {16 * KiB, 16*MiB + 8*KiB, 2},
		"c.malloc.brk":        {12 * KiB, 132 * KiB, 1},
		"c.malloc.arenas":     {8 * KiB, 64 * MiB, 1},
		"file.bss":            {120 * KiB, 32*MiB + 52*KiB, 2},
		"file.mapped":         {2084 * KiB, 2580 * KiB, 7},
		"file.cow":            {28 * KiB, 0, 3},
		"shmem":               {1 * MiB, 1 * MiB, 1},
		"kernel":              {8 * KiB, 24 * KiB, 2},
		"anon.reserved":       {0, 128 * MiB, 1},
	})
	// 48 MiB unclaimed, 2764 KiB of probable Go metadata, and VmRSS is
	// 64 KiB above the page walk.
	const probable = 4*KiB + 712*KiB + 2048*KiB
	if r.UnexplainedBytes != 48*MiB+probable+64*KiB || r.UnexplainedReservedBytes != 48*MiB+4*KiB+2560*KiB+32*MiB {
		t.Errorf("unexplained %d resident, %d reserved; want 48 MiB + 2764 KiB + 64 KiB, 82.5 MiB + 4 KiB", r.UnexplainedBytes, r.UnexplainedReservedBytes)
	}
	if len(r.UnexplainedMappings) != 4 || r.UnexplainedMappings[0].Start != 0x7f0010000000 || r.UnexplainedMappings[0].ResidentBytes != 48*MiB ||
		strings.Contains(r.UnexplainedMappings[0].Note, probableGoMetadata) {
		t.Errorf("unexplained mappings %+v, want the 48 MiB at 0x7f0010000000 first", r.UnexplainedMappings)
	}
	for _, p := range r.UnexplainedMappings[1:] {
		if !strings.Contains(p.Note, probableGoMetadata) {
			t.Errorf("unexplained mapping %+v is not marked as probable Go metadata", p)
		}
	}
	if r.ProbableGoMetadataBytes != probable || r.ProbableGoMetadataBudgetLeftBytes != 3*MiB+512*KiB-probable ||
		!strings.Contains(r.UnexplainedNote, "probable Go metadata; 820 KiB of their 3.5 MiB budget left") {
		t.Errorf("probable Go metadata %d B, budget left %d B; note %q", r.ProbableGoMetadataBytes, r.ProbableGoMetadataBudgetLeftBytes, r.UnexplainedNote)
	}
	if !strings.Contains(r.UnexplainedNote, "large: smaps has resident memory") {
		t.Errorf("note %q does not say the unexplained is large", r.UnexplainedNote)
	}
	wantStacks := []ThreadStack{
		{Lo: 0x7f0020001000, Hi: 0x7f0020101000, ReservedBytes: 1 * MiB, GuardBytes: 4 * KiB, ResidentBytes: 16 * KiB, Source: "pthread_getattr_np"},
		{Lo: 0x7f0020102000, Hi: 0x7f0020202000, TID: 104, ReservedBytes: 1 * MiB, GuardBytes: 4 * KiB, ResidentBytes: 12 * KiB, Source: "pthread_getattr_np"},
		{Lo: 0x7f0030001000, Hi: 0x7f0030801000, TID: 101, ReservedBytes: 8 * MiB, GuardBytes: 4 * KiB, ResidentBytes: 8 * KiB, Source: "syscall sp"},
		{Lo: 0x7f0040001000, Hi: 0x7f0040801000, ReservedBytes: 8 * MiB, GuardBytes: 4 * KiB, ResidentBytes: 8 * KiB, Source: "guard shape"},
	}
	if len(r.ThreadStacks) != len(wantStacks) {
		t.Fatalf("stacks %+v", r.ThreadStacks)
	}
	for i, w := range wantStacks {
		if r.ThreadStacks[i] != w {
			t.Errorf("stack %d:\n got %+v\nwant %+v", i, r.ThreadStacks[i], w)
		}
	}
	if r.PthreadStacks != 4 || r.ThreadStackReservedBytes != 18*MiB || r.ThreadStackGuardBytes != 16*KiB || r.ThreadStackResidentBytes != 44*KiB {
		t.Errorf("stack totals %d, %d, %d, %d", r.PthreadStacks, r.ThreadStackReservedBytes, r.ThreadStackGuardBytes, r.ThreadStackResidentBytes)
	}
	if r.GlibcArenas != 1 || r.GoArenaRSSBytes != 120*MiB || r.GoMappedNotResidentBytes != 130*MiB+512*KiB-6*MiB-120*MiB {
		t.Errorf("arenas %d, go arena rss %d, go not resident %d", r.GlibcArenas, r.GoArenaRSSBytes, r.GoMappedNotResidentBytes)
	}
	if r.SmapsRSSBytes != 178140*KiB || r.SmapsSizeBytes != 532860*KiB || r.PSSBytes != 178140*KiB {
		t.Errorf("smaps rss %d, size %d, pss %d", r.SmapsRSSBytes, r.SmapsSizeBytes, r.PSSBytes)
	}
	if len(r.Files) != 2 || r.Files[0].Path != "/usr/bin/probe" || r.Files[0].BSSReservedBytes != 32*MiB || r.Files[1].COWBytes != 24*KiB {
		t.Errorf("files %+v", r.Files)
	}
	if len(r.Warnings) != 0 {
		t.Errorf("warnings %q", r.Warnings)
	}
}

// TestComputeFixtureNoPagemap: without pagemap the stack merged with its
// neighbour is estimated, and the reconciliation says so.
func TestComputeFixtureNoPagemap(t *testing.T) {
	in := fixture(t)
	in.Resident = nil
	r := Compute(in)
	checkSums(t, r)
	checkWalk(t, r)
	for _, p := range r.Parts {
		if p.Name == "stacks.threads" && p.Bytes != 8*KiB+2056*KiB {
			t.Errorf("stacks.threads %d, want the whole merged mapping's 2056 KiB + 8 KiB", p.Bytes)
		}
	}
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "pagemap unreadable") {
		t.Errorf("warnings %q", r.Warnings)
	}
}

// TestComputeNoGoAddrs: without a known heap address Go's arena is not
// found; its 120 MiB become unexplained, and a warning says why.
func TestComputeNoGoAddrs(t *testing.T) {
	in := fixture(t)
	in.GoAddrs = nil
	r := Compute(in)
	checkSums(t, r)
	checkWalk(t, r)
	if r.UnexplainedBytes < 168*MiB || !strings.Contains(strings.Join(r.Warnings, "\n"), "no mapping holds a known Go heap address") {
		t.Errorf("unexplained %d, warnings %q", r.UnexplainedBytes, r.Warnings)
	}
}

func TestComputeCountersOnly(t *testing.T) {
	r := Compute(countersOnly())
	checkSums(t, r)
	checkParts(t, r, map[string]want{
		"go.heap.objects.ledger": {40 * MiB, 40 * MiB, 0},
		"go.heap.objects.other":  {10 * MiB, 10 * MiB, 0},
		"go.heap.free":           {8 * MiB, 8 * MiB, 0},
		"go.stacks.goroutines":   {1 * MiB, 1 * MiB, 0},
		"go.heap.released":       {0, 20 * MiB, 0},
		"go.runtime.metadata":    {5 * MiB, 5 * MiB, 0},
		"outside_go.ledger":      {4 * MiB, 4 * MiB, 0},
		"file.mapped":            {9 * MiB, 0, 0},
		"shmem":                  {1 * MiB, 0, 0},
	})
	if r.UnexplainedBytes != 22*MiB || !strings.Contains(r.UnexplainedNote, "no smaps") {
		t.Errorf("unexplained %d (%q), want 22 MiB", r.UnexplainedBytes, r.UnexplainedNote)
	}
}

// TestGolden pins what Compute makes of two inputs; report's
// TestReconciliationGolden renders these goldens as tables.
func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Input
	}{
		{"cgo_smaps", fixture(t)},
		{"counters_only", countersOnly()},
	} {
		r := Compute(tc.in)
		js, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		golden.Check(t, "json_"+tc.name+".golden", append(js, '\n'))
	}
}

var sink [][]float32

// counterSlackBytes bounds how far the kernel's status counters (per-CPU
// batched since Linux 6.2: percpu_counter with batch max(32, 2 × CPUs)
// pages) can be from the page walk: the batch on every CPU.
func counterSlackBytes() int64 {
	n := int64(runtime.NumCPU())
	return n * max(32, 2*n) * 4 * KiB
}

// TestLiveSumsToRSS reconciles the test process itself. With nothing
// planted, what is unexplained is the status counters' slack, memory that
// changes between the reads (the test allocates nothing meanwhile; the
// runtime's background scavenger may release a little), and C or race
// runtime mappings no source claims beyond Go's metadata budget: a few
// hundred KiB in this process. The bound, 8 MiB plus the counters' slack,
// is far from both that and the 64 MiB the planted test looks for.
func TestLiveSumsToRSS(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc")
	}
	l := ledger.New()
	params := l.Account(ledger.Params)
	for range 4 {
		// 4 MiB each, written so that it is resident: a fresh large
		// allocation is mapped zero pages that no one has touched.
		b := params.Float32s(1 << 20)
		for i := range b {
			b[i] = 1
		}
		sink = append(sink, b)
	}
	defer func() { sink = nil }()
	in, err := GatherSelf(rtstats.New(), l, true)
	if err != nil {
		t.Fatal(err)
	}
	// The buffers' addresses, as run/job gives the trainer's: the heap
	// may have grown into an arena apart from the one GatherSelf's anchors
	// are in, which the rules would then not know as Go's (it read as a
	// glibc heap by its shape, 12 MiB, once in CI).
	for _, b := range sink {
		in.GoAddrs = append(in.GoAddrs, uint64(uintptr(unsafe.Pointer(&b[0]))))
	}
	r := Compute(in)
	checkSums(t, r)
	checkWalk(t, r)
	if r.RSSBytes <= 0 || r.VSZBytes < r.RSSBytes {
		t.Errorf("RSS %d, VSZ %d", r.RSSBytes, r.VSZBytes)
	}
	parts := map[string]Part{}
	for _, p := range r.Parts {
		parts[p.Name] = p
	}
	if got := parts["go.heap.objects.ledger"]; got.Bytes != 16*MiB || got.ReservedBytes != 16*MiB {
		t.Errorf("ledger part %+v, want 16 MiB resident and reserved", got)
	}
	if parts["stacks.main"].Count != 1 || parts["file.mapped"].Bytes == 0 || r.GoArenaRSSBytes < 16*MiB {
		t.Errorf("main stack %+v, files %+v, go arena rss %d", parts["stacks.main"], parts["file.mapped"], r.GoArenaRSSBytes)
	}
	if bound := 8*MiB + counterSlackBytes(); max(r.UnexplainedBytes, -r.UnexplainedBytes) > bound {
		t.Errorf("unexplained %d B with nothing planted, bound %d B", r.UnexplainedBytes, bound)
	}
	var table bytes.Buffer
	if err := report.WriteReconciliation(&table, r); err != nil {
		t.Fatal(err)
	}
	t.Logf("live reconciliation of the test process:\n%s", table.String())
}

// TestComputeBigBufferNotGo: a large mapping with little resident (a BLAS
// buffer) is not taken as Go metadata, however well its resident bytes
// would fit the classes' budget.
func TestComputeBigBufferNotGo(t *testing.T) {
	in := fixture(t)
	for i, m := range in.Mappings {
		if m.Start == 0x7f0010000000 {
			in.Mappings[i].RssBytes, in.Mappings[i].AnonymousBytes = 40*KiB, 40*KiB
		}
	}
	in.Status.VmRSSBytes -= 48*MiB - 40*KiB
	r := Compute(in)
	checkSums(t, r)
	var buf *Piece
	for i, p := range r.UnexplainedMappings {
		if p.Start == 0x7f0010000000 {
			buf = &r.UnexplainedMappings[i]
		}
	}
	if buf == nil || strings.Contains(buf.Note, probableGoMetadata) || r.UnexplainedBytes != 40*KiB+64*KiB+r.ProbableGoMetadataBytes {
		t.Errorf("unexplained %d, mappings %+v; want the 48 MiB buffer's 40 KiB, not as Go metadata", r.UnexplainedBytes, r.UnexplainedMappings)
	}
}

// TestComputeNamedMappings: on a kernel that keeps anonymous mappings'
// names, Go's and glibc's names decide.
func TestComputeNamedMappings(t *testing.T) {
	m := func(start, size uint64, perms, path string, rss uint64) procfs.Mapping {
		return procfs.Mapping{Start: start, End: start + size, Perms: perms, Path: path, SizeBytes: size, RssBytes: rss, AnonymousBytes: rss}
	}
	in := Input{
		Status: procfs.Status{VmRSSBytes: 30 * MiB, VmSizeBytes: 1169*MiB + 4*KiB},
		Mappings: []procfs.Mapping{
			m(0x10000000, 64*MiB, "rw-p", "[anon: Go: heap]", 20*MiB),
			m(0x14000000, 1024*MiB, "---p", "[anon: Go: heap reservation]", 0),
			m(0x7f0000000000, 1*MiB, "rw-p", "[anon: Go: page summary]", 1*MiB),
			m(0x7f0001000000, 4*KiB, "---p", "[anon: glibc: pthread stack guard]", 0),
			m(0x7f0001001000, 8*MiB, "rw-p", "[anon: glibc: pthread stack: 4242]", 64*KiB),
			m(0x7f0010000000, 64*MiB, "rw-p", "[anon: glibc: malloc arena]", 1*MiB),
			m(0x7f0020000000, 4*MiB, "rw-p", "[anon: glibc: malloc]", 4*MiB),
			m(0x7f0030000000, 4*MiB, "rw-p", "[anon: my cache]", 4*MiB-64*KiB),
		},
		// The heap's 64 MiB are mapped read-write: 20 MiB of objects,
		// 44 MiB released.
		Runtime: rtstats.Snapshot{Memory: rtstats.MemoryClasses{HeapObjectsBytes: 20 * MiB, HeapReleasedBytes: 44 * MiB, MetadataOtherBytes: 1 * MiB, TotalBytes: 65 * MiB}},
	}
	r := Compute(in)
	checkSums(t, r)
	got := map[string]Part{}
	for _, p := range r.Parts {
		got[p.Name] = p
	}
	for name, w := range map[string]want{
		"go.heap.objects.other": {20 * MiB, 20 * MiB, 0},
		"go.arena.other":        {0, 1024 * MiB, 2},
		"go.runtime.metadata":   {1 * MiB, 1 * MiB, 1},
		"stacks.threads":        {64 * KiB, 8*MiB + 4*KiB, 1},
		"c.malloc.arenas":       {1 * MiB, 64 * MiB, 1},
		"c.malloc.mmap":         {4 * MiB, 4 * MiB, 1},
	} {
		if p := got[name]; p.Bytes != w.resident || p.ReservedBytes != w.reserved || p.Count != w.count {
			t.Errorf("%s: %+v, want %+v", name, p, w)
		}
	}
	// A name nobody knows is still unclaimed anonymous memory.
	if len(r.UnexplainedMappings) != 1 || r.UnexplainedMappings[0].Path != "[anon: my cache]" || r.UnexplainedBytes != 4*MiB-64*KiB || len(r.Warnings) != 0 {
		t.Errorf("unexplained %d: %+v; warnings %q", r.UnexplainedBytes, r.UnexplainedMappings, r.Warnings)
	}
}

// nextToGoArenaCase is one edit of the fixture next to Go's arena: the
// unexplained bytes and anon.reserved grow by these; go.arena.other
// resident is arenaOther; warn is in the warnings.
type nextToGoArenaCase struct {
	name                                                   string
	edit                                                   func(in *Input)
	unexplained, unexplainedReserved, reserved, arenaOther int64
	warn                                                   string
}

// anonMapping is an anonymous mapping of smaps, rss bytes resident.
func anonMapping(start, size uint64, perms string, rss uint64) procfs.Mapping {
	return procfs.Mapping{Start: start, End: start + size, Perms: perms, SizeBytes: size, RssBytes: rss, AnonymousBytes: rss}
}

// nextToGoArenaCases are TestComputeNextToGoArena's edits.
func nextToGoArenaCases() []nextToGoArenaCase {
	return []nextToGoArenaCase{{
		// 32 MiB written right above the PROT_NONE top: not Go's (the
		// heap grows from below, and that top is not yet mapped).
		name: "plant above the reservation",
		edit: func(in *Input) {
			in.Mappings = append(in.Mappings, anonMapping(0x1a000c000000, 32*MiB, "rw-p", 32*MiB))
			in.Status.VmRSSBytes += 32 * MiB
			in.Status.VmSizeBytes += 32 * MiB
		},
		unexplained: 32 * MiB, unexplainedReserved: 32 * MiB,
	}, {
		// 16 MiB written right below the PROT_NONE base: not Go's.
		name: "plant below the reservation",
		edit: func(in *Input) {
			in.Mappings = append(in.Mappings, anonMapping(0x1a0000000000-16*MiB, 16*MiB, "rw-p", 16*MiB))
			in.Status.VmRSSBytes += 16 * MiB
			in.Status.VmSizeBytes += 16 * MiB
		},
		unexplained: 16 * MiB, unexplainedReserved: 16 * MiB,
	}, {
		// 16 MiB of someone's PROT_NONE merged with the top: claimed up
		// to the arena boundary only.
		name: "reservation merged past the arena boundary",
		edit: func(in *Input) {
			for i, m := range in.Mappings {
				if m.Start == 0x1a0009000000 {
					in.Mappings[i].End += 16 * MiB
					in.Mappings[i].SizeBytes += 16 * MiB
				}
			}
			in.Status.VmSizeBytes += 16 * MiB
		},
		reserved: 16 * MiB,
	}, {
		// 32 MiB merged with the heap's read-write run (the top shrinks
		// to 16 MiB): no address tells it apart, runtime/metrics does.
		// 1 MiB of it gives heap free back what was cut (the classes
		// were 1 MiB above the arenas' resident); of the 31 MiB the
		// arenas then hold beyond the heap classes at most the metadata
		// classes' 3.5 MiB can be Go's.
		name: "plant merged with the heap",
		edit: func(in *Input) {
			for i, m := range in.Mappings {
				switch m.Start {
				case 0x1a0001000000:
					in.Mappings[i].End += 32 * MiB
					in.Mappings[i].SizeBytes += 32 * MiB
					in.Mappings[i].RssBytes += 32 * MiB
					in.Mappings[i].AnonymousBytes += 32 * MiB
				case 0x1a0009000000:
					in.Mappings[i].Start += 32 * MiB
					in.Mappings[i].SizeBytes -= 32 * MiB
				}
			}
			in.Status.VmRSSBytes += 32 * MiB
		},
		unexplained: 31*MiB - 3*MiB - 512*KiB, unexplainedReserved: 160*MiB - 127*MiB - 3*MiB - 512*KiB,
		arenaOther: 3*MiB + 512*KiB,
		warn:       "beyond what runtime/metrics says Go mapped there",
	}}
}

// TestComputeNextToGoArena: what lies next to Go's arena is Go's only
// where the runtime says so (goArenas). The fixture's arena is three
// 64 MiB arenas at 0x1a0000000000 (PROT_NONE base, 128 MiB read-write, a
// PROT_NONE top to 0x1a000c000000).
func TestComputeNextToGoArena(t *testing.T) {
	base := Compute(fixture(t))
	part := func(r Reconciliation, name string) Part {
		for _, p := range r.Parts {
			if p.Name == name {
				return p
			}
		}
		t.Fatalf("no part %s", name)
		return Part{}
	}
	for _, tc := range nextToGoArenaCases() {
		t.Run(tc.name, func(t *testing.T) {
			in := fixture(t)
			tc.edit(&in)
			r := Compute(in)
			checkSums(t, r)
			if d := r.UnexplainedBytes - base.UnexplainedBytes; d != tc.unexplained {
				t.Errorf("unexplained grew by %d B, want %d B", d, tc.unexplained)
			}
			if d := r.UnexplainedReservedBytes - base.UnexplainedReservedBytes; d != tc.unexplainedReserved {
				t.Errorf("unexplained reserved grew by %d B, want %d B", d, tc.unexplainedReserved)
			}
			if d := part(r, "anon.reserved").ReservedBytes - part(base, "anon.reserved").ReservedBytes; d != tc.reserved {
				t.Errorf("anon.reserved grew by %d B, want %d B", d, tc.reserved)
			}
			if p := part(r, "go.arena.other"); p.Bytes != tc.arenaOther {
				t.Errorf("go.arena.other %+v, want %d B resident", p, tc.arenaOther)
			}
			if w := strings.Join(r.Warnings, "\n"); tc.warn == "" && w != "" || !strings.Contains(w, tc.warn) {
				t.Errorf("warnings %q, want %q", r.Warnings, tc.warn)
			}
		})
	}
}

// TestComputeProbeHeap: the probe's own heap is its own part, out of the
// objects not in the ledger, and capped by them with a warning.
func TestComputeProbeHeap(t *testing.T) {
	in := fixture(t)
	in.ProbeHeap = &ProbeHeap{Bytes: 4 * MiB, Note: "measured"}
	r := Compute(in)
	checkSums(t, r)
	got := map[string]Part{}
	for _, p := range r.Parts {
		got[p.Name] = p
	}
	base := Compute(fixture(t))
	if p, o := got["probe.heap"], got["go.heap.objects.other"]; p.Bytes != 4*MiB || p.ReservedBytes != 4*MiB || p.Note != "measured" ||
		o.Bytes != 6*MiB || r.UnexplainedBytes != base.UnexplainedBytes || r.Parts[1].Name != "probe.heap" {
		t.Errorf("probe.heap %+v, go.heap.objects.other %+v (second part %s), unexplained %d (was %d)", p, o, r.Parts[1].Name, r.UnexplainedBytes, base.UnexplainedBytes)
	}
	in.ProbeHeap.Bytes = 20 * MiB
	r = Compute(in)
	checkSums(t, r)
	if p := r.Parts[1]; p.Name != "probe.heap" || p.ReservedBytes != 10*MiB || r.UnexplainedBytes != base.UnexplainedBytes ||
		!strings.Contains(strings.Join(r.Warnings, "\n"), "probe.heap is capped") {
		t.Errorf("probe.heap %+v with 20 MiB measured and 10 MiB of objects outside the ledger; warnings %q", p, r.Warnings)
	}
}
