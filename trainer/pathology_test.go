package trainer

import (
	"context"
	"math"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"

	"memprobe/ledger"
	"memprobe/trainer/data"
	"memprobe/trainer/model"
	"memprobe/trainer/osthread"
)

// pathOptions is a small tiny-preset run with a ledger: the switches'
// effects are read from the ledger and Counts.
func pathOptions(threads int, p Pathology) Options {
	o := testOptions("tiny", threads)
	o.GEMM = "auto" // the fastest compiled in; these tests do not count allocations
	o.Pathology = p
	o.Ledger = ledger.New()
	return o
}

// smallCorpus keeps an eager epoch small: 40,000 tokens, 20 batches of
// the tiny preset.
func smallCorpus(t testing.TB) *data.Dataset {
	ds, err := data.Load("synthetic:200KB", 788, 1)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func ledgerBytes(l *ledger.Ledger, name string) int64 {
	for _, e := range l.Snapshot() {
		if e.Component == name {
			return e.CurrentBytes
		}
	}
	return 0
}

func TestHierarchySize(t *testing.T) {
	for _, c := range []struct{ threads, want int }{{1, 13}, {12, 13}, {13, 157}, {63, 157}, {156, 157}, {157, 1885}} {
		if got := HierarchySize(c.threads); got != c.want {
			t.Errorf("HierarchySize(%d) = %d, want %d", c.threads, got, c.want)
		}
	}
}

// TestEveryPathologyGivesTheSameLosses: all switches on, each alone, and
// none give the same losses and parameters bit for bit.
func TestEveryPathologyGivesTheSameLosses(t *testing.T) {
	ds := smallCorpus(t)
	all := Pathology{ContextWorkspaces: true, SphereHierarchy: true, CacheScale: 2.06, ClearCaches: true,
		EmbeddingCache: true, EagerBatches: true, ModelLock: true}
	if osthread.Available() {
		all.WorkerStackBytes = 1 << 20
	}
	cases := map[string]Pathology{
		"fixed":     {},
		"all":       all,
		"contexts":  {ContextWorkspaces: true},
		"caches":    {CacheScale: 3, ClearCaches: true, EmbeddingCache: true},
		"eager":     {EagerBatches: true},
		"modellock": {ModelLock: true},
	}
	if osthread.Available() {
		// Not MinStackBytes: a binary that links OpenBLAS needs room for
		// its 60 KiB of static TLS on every thread's stack.
		cases["pthreads"] = Pathology{WorkerStackBytes: 256 << 10}
	}
	const steps = 2
	var ref []float32
	var refParams []float32
	for _, name := range []string{"fixed", "all", "contexts", "caches", "eager", "modellock", "pthreads"} {
		p, ok := cases[name]
		if !ok {
			continue
		}
		tr := newTestTrainer(t, pathOptions(3, p), ds)
		losses := make([]float32, steps)
		for i := range losses {
			losses[i] = tr.Step()
		}
		if err := tr.Err(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if ref == nil {
			ref, refParams = losses, append([]float32(nil), tr.Param.Memory...)
			continue
		}
		for i := range losses {
			if math.Float32bits(losses[i]) != math.Float32bits(ref[i]) {
				t.Errorf("%s: step %d loss %.9g, fixed trainer %.9g", name, i+1, losses[i], ref[i])
			}
		}
		for i, v := range tr.Param.Memory {
			if math.Float32bits(v) != math.Float32bits(refParams[i]) {
				t.Errorf("%s: parameter %d is %.9g, fixed trainer %.9g", name, i, v, refParams[i])
				break
			}
		}
	}
}

func TestWorkerThreadsAndStacks(t *testing.T) {
	if !osthread.Available() {
		t.Skip("built without cgo")
	}
	const threads = 3
	bytes := map[int64]int64{}
	for _, stack := range []int64{8 << 20, 1 << 20, 0} {
		o := pathOptions(threads, Pathology{WorkerStackBytes: stack})
		tr := newTestTrainer(t, o, smallCorpus(t))
		tr.Step()
		c := tr.Counts()
		wantThreads := threads
		if stack == 0 {
			wantThreads = 0
		}
		if c.WorkerThreads != wantThreads || c.WorkerStackBytes != stack {
			t.Errorf("stack %d: %d worker threads of %d bytes, want %d of %d", stack, c.WorkerThreads, c.WorkerStackBytes, wantThreads, stack)
		}
		bytes[stack] = ledgerBytes(o.Ledger, ledger.WorkerStacks)
		if want := int64(wantThreads) * stack; bytes[stack] != want {
			t.Errorf("stack %d: ledger %s holds %d bytes, want %d", stack, ledger.WorkerStacks, bytes[stack], want)
		}
		tr.Close()
		if got := ledgerBytes(o.Ledger, ledger.WorkerStacks); got != 0 {
			t.Errorf("stack %d: %d stack bytes left in the ledger after Close", stack, got)
		}
	}
}

// TestContextsOwnWorkspaces: after a step, a context is unused when its
// workspace ran no sequence: the sphere hierarchy's contexts without a
// worker, and the contexts of workers beyond the batch (sequence b goes to
// worker b mod N, so with N > B workers B..N-1 never run one).
func TestContextsOwnWorkspaces(t *testing.T) {
	ds := smallCorpus(t)
	cfg := model.Presets["tiny"]
	perWorkspace := 4*int64(cfg.ActsSize()+cfg.GradActsSize()) + 4*int64(cfg.Context)
	B := cfg.Batch
	for _, c := range []struct {
		name                          string
		threads                       int
		p                             Pathology
		contexts, unused, workspaces  int
		idle                          int
		unusedBytes, activationsBytes int64
	}{
		{"hierarchy", 3, Pathology{ContextWorkspaces: true, SphereHierarchy: true}, 13, 10, 3, 0, 10 * perWorkspace, 3 * 4 * int64(cfg.ActsSize())},
		{"per worker", 3, Pathology{ContextWorkspaces: true}, 3, 0, 3, 0, 0, 3 * 4 * int64(cfg.ActsSize())},
		{"per worker, more workers than sequences", B + 5, Pathology{ContextWorkspaces: true}, B + 5, 5, B + 5, 5, 0, int64(B+5) * 4 * int64(cfg.ActsSize())},
		{"executors", 3, Pathology{}, 0, 0, 2, 0, 0, 2 * 4 * int64(cfg.ActsSize())},
	} {
		o := pathOptions(c.threads, c.p)
		o.Executors = 0
		if !c.p.ContextWorkspaces {
			o.Executors = 2
		}
		tr := newTestTrainer(t, o, ds)
		tr.Step()
		got := tr.Counts()
		if got.Contexts != c.contexts || got.UnusedContexts != c.unused || got.Workspaces != c.workspaces || got.IdleWorkers != c.idle {
			t.Errorf("%s: %d contexts (%d unused), %d workspaces, %d idle workers; want %d (%d), %d, %d", c.name, got.Contexts, got.UnusedContexts, got.Workspaces, got.IdleWorkers, c.contexts, c.unused, c.workspaces, c.idle)
		}
		if b := ledgerBytes(o.Ledger, ledger.WorkerContexts); b != c.unusedBytes {
			t.Errorf("%s: ledger %s = %d, want %d", c.name, ledger.WorkerContexts, b, c.unusedBytes)
		}
		if b := ledgerBytes(o.Ledger, ledger.Activations); b != c.activationsBytes {
			t.Errorf("%s: ledger %s = %d, want %d", c.name, ledger.Activations, b, c.activationsBytes)
		}
	}
}

func TestCacheSizes(t *testing.T) {
	ds := smallCorpus(t)
	cfg := model.Presets["tiny"]
	att := int64(cfg.Layers * cfg.Heads * cfg.Context * cfg.Context)
	const scale = 2.5
	o := pathOptions(2, Pathology{CacheScale: scale, ClearCaches: true, EmbeddingCache: true})
	o.Executors = 2
	tr := newTestTrainer(t, o, ds)
	// Which executors a step's sequences run on is the scheduler's choice
	// (with one P, one executor may take them all): count, per step, the
	// executors that ran a sequence.
	ran := int64(0)
	seqs := make([]int64, len(tr.execs))
	for range 2 {
		tr.Step()
		for i, e := range tr.execs {
			if e.sequences > seqs[i] {
				ran++
			}
			seqs[i] = e.sequences
		}
	}
	want := map[string]int64{
		ledger.CacheAttention:  2 * 4 * int64(math.Ceil(float64(att)*scale)),
		ledger.Activations:     2 * 4 * (int64(cfg.ActsSize()) - att),
		ledger.CacheBackward:   2 * 4 * int64(math.Ceil(float64(cfg.GradActsSize())*scale)),
		ledger.ActivationGrads: 0,
		ledger.CacheEmbedding:  2 * 4 * int64(math.Ceil(float64(cfg.Vocab*cfg.Dim)*scale)),
	}
	for name, w := range want {
		if got := ledgerBytes(o.Ledger, name); got != w {
			t.Errorf("scale %g: ledger %s = %d, want %d", scale, name, got, w)
		}
	}
	c := tr.Counts()
	// Each executor clears and refreshes once per step it runs a sequence in.
	if c.CacheClears != ran || c.EmbeddingCopies != ran || ran < 2 {
		t.Errorf("2 executors, 2 steps, an executor running in %d of them: %d clears, %d embedding copies; want %d and %d", ran, c.CacheClears, c.EmbeddingCopies, ran, ran)
	}
	for _, e := range tr.execs {
		if &e.params.WTE[0] == &tr.Param.WTE[0] {
			t.Errorf("executor %d reads wte itself, not its embedding cache", e.id)
		}
		// The update made the cache stale; the next sequence refreshes it.
		if e.version == tr.version {
			t.Errorf("executor %d: cache up to date before its next sequence", e.id)
		}
		tr.prepare(e)
		for i, v := range e.params.WTE {
			if v != tr.Param.WTE[i] {
				t.Fatalf("executor %d: embedding cache differs from wte at %d", e.id, i)
			}
		}
	}
}

func TestBatchStoreEagerMatchesLazy(t *testing.T) {
	ds := smallCorpus(t)
	cfg := model.Presets["tiny"]
	lazy := newBatchStore(cfg, ds.Tokens, false, nil)
	eager := newBatchStore(cfg, ds.Tokens, true, nil)
	if len(lazy.bufs) != 1 || len(eager.bufs) != eager.perEpoch || eager.perEpoch < 2 {
		t.Fatalf("buffers: lazy %d, eager %d (epoch of %d steps)", len(lazy.bufs), len(eager.bufs), eager.perEpoch)
	}
	T := cfg.Context
	in1, tg1 := make([]uint16, T), make([]uint16, T)
	in2, tg2 := make([]uint16, T), make([]uint16, T)
	for step := 0; step < 2*eager.perEpoch+1; step++ {
		lazy.begin(step)
		eager.begin(step)
		for b := range cfg.Batch {
			lazy.fill(b)
			eager.fill(b)
			lazy.load(b, in1, tg1)
			eager.load(b, in2, tg2)
			p := ((step*cfg.Batch + b) * T) % lazy.n
			for i := range T {
				if in1[i] != ds.Tokens[p+i] || tg1[i] != ds.Tokens[p+i+1] || in2[i] != in1[i] || tg2[i] != tg1[i] {
					t.Fatalf("step %d row %d position %d: lazy %d->%d, eager %d->%d, tokens %d->%d", step, b, i, in1[i], tg1[i], in2[i], tg2[i], ds.Tokens[p+i], ds.Tokens[p+i+1])
				}
			}
		}
	}
	// Eager fills a whole epoch at each epoch's first step: 3 epochs began.
	if got, want := eager.fills.Load(), int64(3*eager.perEpoch*cfg.Batch); got != want {
		t.Errorf("eager row fills %d, want %d", got, want)
	}
}

func TestModelLockGrantsInOrder(t *testing.T) {
	l := newModelLock()
	const n = 16
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	for i := n - 1; i >= 0; i-- {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.lock(i)
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			l.unlock()
		}()
	}
	wg.Wait()
	for i, v := range order {
		if v != i {
			t.Fatalf("grant order %v", order)
		}
	}
	if l.holds.Load() != n {
		t.Errorf("holds %d, want %d", l.holds.Load(), n)
	}
}

func TestModelLockHolds(t *testing.T) {
	ds := smallCorpus(t)
	for _, lock := range []bool{true, false} {
		tr := newTestTrainer(t, pathOptions(3, Pathology{ModelLock: lock}), ds)
		for range 2 {
			tr.Step()
		}
		want := int64(0)
		if lock {
			want = int64(2 * tr.cfg.Batch)
		}
		if got := tr.Counts().ModelLockHolds; got != want {
			t.Errorf("model lock %v: %d holds over 2 steps, want %d", lock, got, want)
		}
	}
}

// TestTurnstileOrders runs many sequences through the slots at once; each
// slot must see them in order.
func TestTurnstileOrders(t *testing.T) {
	const seqs, slots = 24, 5
	ts := newTurnSlots(slots)
	var mu sync.Mutex
	seen := make([][]int, slots)
	var wg sync.WaitGroup
	for s := seqs - 1; s >= 0; s-- {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := seqTurnstile{slots: ts, seq: int32(s)}
			for k := range slots {
				st.Enter(k)
				mu.Lock()
				seen[k] = append(seen[k], s)
				mu.Unlock()
				st.Leave(k)
			}
		}()
	}
	wg.Wait()
	for k, order := range seen {
		for i, s := range order {
			if s != i {
				t.Fatalf("slot %d saw %v", k, order)
			}
		}
	}
}

func TestLabels(t *testing.T) {
	l := newWorkerLabels(5)
	got := map[string]string{}
	pprof.ForLabels(l[stageBackward], func(k, v string) bool { got[k] = v; return true })
	if got["worker"] != "5" || got["stage"] != "backward" || len(got) != 2 {
		t.Errorf("labels of stage backward: %v", got)
	}
	if n := testing.AllocsPerRun(100, func() { l.set(stageForward); l.set(stageIdle) }); n != 0 {
		t.Errorf("setting labels allocates %.1f objects", n)
	}
	pprof.SetGoroutineLabels(context.Background())
}

func TestPathologyValidate(t *testing.T) {
	for _, c := range []struct {
		mut  func(*Options)
		want string
	}{
		{func(o *Options) { o.Pathology.CacheScale = 0.5 }, "cache scale 0.5 out of range"},
		{func(o *Options) { o.Pathology.CacheScale = 65 }, "cache scale 65 out of range"},
		{func(o *Options) { o.Pathology.SphereHierarchy = true }, "sphere hierarchy"},
		{func(o *Options) { o.Pathology.ContextWorkspaces = true; o.Executors = 2 }, "leave executors at 0"},
		{func(o *Options) { o.Pathology.WorkerStackBytes = 1000 }, "worker stack"},
		{func(o *Options) { o.Engine = "jit" }, `engine "jit"`},
		{func(o *Options) { o.Tape.KeepGraphs = true }, "need engine tape"},
		{func(o *Options) { o.Engine = "tape"; o.Tape.Allocator = "pool" }, `tape allocator "pool"`},
		{func(o *Options) { o.Engine = "tape"; o.Pathology.ContextWorkspaces = true }, "need engine static"},
		{func(o *Options) { o.Decode = "fast" }, "fast"},
		{func(o *Options) { o.Device = "cuda" }, "set a decode mode"},
		{func(o *Options) { o.Side.Every = -1 }, "side work"},
	} {
		o := testOptions("micro", 2)
		c.mut(&o)
		err := o.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want an error containing %q, got %v", c.want, err)
		}
	}
	if osthread.Available() {
		return
	}
	o := testOptions("micro", 2)
	o.Pathology.WorkerStackBytes = 1 << 20
	if err := o.Validate(); err != osthread.ErrNoCgo {
		t.Errorf("worker stacks without cgo: %v", err)
	}
}

// TestSideWork runs the side work every step: sample and checkpoint run
// on worker 0 and change no loss.
func TestSideWork(t *testing.T) {
	ds := smallCorpus(t)
	ref := newTestTrainer(t, pathOptions(2, Pathology{}), ds)
	o := pathOptions(2, Pathology{})
	o.Side = SideWork{Every: 1, GenerateTokens: 3}
	tr := newTestTrainer(t, o, ds)
	for i := range 2 {
		a, b := ref.Step(), tr.Step()
		if math.Float32bits(a) != math.Float32bits(b) {
			t.Errorf("step %d: loss %.9g with side work, %.9g without", i+1, b, a)
		}
	}
	if err := tr.Err(); err != nil {
		t.Fatal(err)
	}
	if got := tr.Counts().SideWorkRuns; got != 2 {
		t.Errorf("side work ran %d times in 2 steps, want 2", got)
	}
}
