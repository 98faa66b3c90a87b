package phase

import (
	"math"

	"memprobe/trainer"
)

// Figures quoted from note 000 (000_5305d552370e1f08.txt), used to derive
// the before state, not measured here.
const (
	// "Per thread stack: ~8MB default" — glibc's default from RLIMIT_STACK.
	noteDefaultStackBytes = 8 << 20
	// Phase 1's code: pthread_attr_setstacksize(&attr, 1024 * 1024).
	noteFixedStackBytes = 1024 * 1024
	// "Attention cache: 8.65MB (reported)" (the note's MB is 10^6 bytes:
	// its backward buffers, "8.39MB", are exactly 2 × 4,194,304 B).
	noteAttentionCacheBytes = 8.65e6
	// Phase 3's right-size formula, batch_size * seq_len * embed_dim *
	// sizeof(float), with the note's batch 32, sequence 128, dim 256.
	noteRightSizedCacheBytes = 32 * 128 * 256 * 4
)

// BeforeCacheScale is the before state's cache size as a factor of
// right-sized: the note's reported attention cache over the note's own
// right-size formula, 8.65e6 / 4,194,304 = 2.06. (Its backward buffers give
// 2.00.) One factor sizes all three caches.
var BeforeCacheScale = math.Round(noteAttentionCacheBytes/noteRightSizedCacheBytes*100) / 100

const (
	threadsNote000 = "000_5305d552370e1f08.txt"
	threadsNote001 = "001_fbedd5f79eadf5ac.txt"
	arenaNote      = "002_f93b3739addeb217.txt"
	decodeNote     = "003_d37e221d22252edd.txt"
	embeddingNote  = "004_ae7863329356fc77.txt"
)

// change, factor and absolute make the three kinds of Expectation.
func change(metric, versus string, delta float64) Expectation {
	return Expectation{Metric: metric, Versus: versus, Delta: delta}
}

func factor(metric, versus string, ratio float64) Expectation {
	return Expectation{Metric: metric, Versus: versus, Ratio: ratio}
}

func absolute(metric string, value float64) Expectation {
	return Expectation{Metric: metric, Versus: VersusAbsolute, Delta: value}
}

// geomean is a claimed range's middle on a log scale ("3-5x": 3.87x), the
// one figure an Expectation holds; the factor-of-2 tolerance of the check
// covers ranges up to 4x wide.
func geomean(lo, hi float64) float64 { return math.Sqrt(lo * hi) }

// The notes' claims in the plans below: the threads note's savings are per
// phase (VersusPrevious); the decode note's fixes are alternatives, each
// claimed against the original loop (VersusBefore), and its speedups are
// of decoding alone, while a job's tokens_per_sec is of whole training
// steps, of which the decode head is a small part (docs/phases.md).

func threadsPlan() Plan {
	return Plan{Name: "threads", Notes: []string{threadsNote000, threadsNote001}, Phases: []Phase{
		{
			Name:        "before",
			Description: "8 MiB stacks, sphere tree, big caches, eager, lock",
			Claim:       "1.32 GB peak for a 24 MB dataset with 63 threads (55x the data)",
			Expect:      []Expectation{absolute("peak_rss_bytes", 1.32e9)},
			Mechanism: "every worker on a pthread with an 8 MiB stack; the sphere hierarchy of contexts " +
				"(1 + 12 + 144 for 63 workers), each owning a whole workspace written through at creation; " +
				"caches at 2.06x right-sized (the headroom beyond one sequence is cleared every step, never read), " +
				"and a per-context copy of wte; every batch of " +
				"the epoch materialised; one ticket lock around forward and backward",
			Apply: func(o *trainer.Options) {
				o.Pathology = trainer.Pathology{
					WorkerStackBytes:  noteDefaultStackBytes,
					ContextWorkspaces: true,
					SphereHierarchy:   true,
					CacheScale:        BeforeCacheScale,
					ClearCaches:       true,
					EmbeddingCache:    true,
					EagerBatches:      true,
					ModelLock:         true,
				}
			},
		},
		{
			Name:        "P1",
			Description: "worker stacks 8 MiB -> 1 MiB",
			Claim:       "save 455 MB (35 %): 65 threads x 8 MB = 520 MB",
			Expect:      []Expectation{change("peak_rss_bytes", VersusPrevious, -455e6)},
			Mechanism:   "pthread_attr_setstacksize(1 MiB) for each worker thread (ledger worker.stacks: reserved, not resident)",
			Apply:       func(o *trainer.Options) { o.Pathology.WorkerStackBytes = noteFixedStackBytes },
		},
		{
			Name:        "P2",
			Description: "contexts only for active workers",
			Claim:       "save 376 MB (28 %): ~4 MB per unused sphere x 94",
			Expect:      []Expectation{change("peak_rss_bytes", VersusPrevious, -376e6)},
			Mechanism:   "one context per worker instead of the whole hierarchy (ledger worker.contexts); with 63 workers and B = 32, workers 32-62 run no sequence, so 31 of the 63 contexts stay unused",
			Apply:       func(o *trainer.Options) { o.Pathology.SphereHierarchy = false },
		},
		{
			Name:        "P3",
			Description: "right-size caches; embedding cache is a view of wte",
			Claim:       "save 15 MB (1 %)",
			Expect:      []Expectation{change("peak_rss_bytes", VersusPrevious, -15e6)},
			Mechanism:   "attention cache and backward buffers at one sequence's size, not cleared per step; no wte copy (ledger cache.*); the headroom removed was cleared every step and never read: memory and memset time, not computation",
			Apply: func(o *trainer.Options) {
				o.Pathology.CacheScale = 0
				o.Pathology.ClearCaches = false
				o.Pathology.EmbeddingCache = false
			},
		},
		{
			Name:        "P4",
			Description: "batches filled lazily, one at a time",
			Claim:       "save 2 MB (0.4 %)",
			Expect:      []Expectation{change("peak_rss_bytes", VersusPrevious, -2e6)},
			Mechanism:   "one batch buffer refilled each step instead of the whole epoch (ledger batches)",
			Apply:       func(o *trainer.Options) { o.Pathology.EagerBatches = false },
		},
		{
			Name:        "P5",
			Description: "remove model_lock",
			Claim:       "63x speedup",
			Expect:      []Expectation{factor("tokens_per_sec", VersusPrevious, 63)},
			Mechanism:   "no lock: sequences overlap, ordered only per gradient slot by the turnstile",
			Apply:       func(o *trainer.Options) { o.Pathology.ModelLock = false },
		},
		{
			Name:        "P6",
			Description: "workers decoupled from workspaces (fixed trainer)",
			Claim:       "",
			Mechanism:   "at most GOMAXPROCS executors own workspaces, granted in sequence order; goroutine workers",
			Apply: func(o *trainer.Options) {
				o.Pathology.ContextWorkspaces = false
				o.Pathology.WorkerStackBytes = 0
			},
		},
	}}
}

// sideEvery and sideGenerateTokens are the arena plan's side work: a sample
// and a checkpoint after every step, as note 002's loop ran
// generate_sample() and checkpoint_save() inside the training loop. Eight
// tokens keep the sample's share of a step small and visible.
const (
	sideEvery          = 1
	sideGenerateTokens = 8
	// Note 002: "Arena already had aggressive memory freeing every 10
	// iterations" — present in every phase.
	arenaFreeEvery = 10
)

func arenaPlan() Plan {
	return Plan{Name: "arena", Notes: []string{arenaNote}, Phases: []Phase{
		{
			Name:        "before",
			Description: "tape exec, arena reset before side work, naive GEMM",
			Claim:       "60 GB, 30-60 s per iteration (--small)",
			Expect: []Expectation{
				absolute("peak_rss_bytes", 60e9),
				absolute("step_ns_median", geomean(30, 60)*1e9),
			},
			Mechanism: "tape execution with temporaries from a chunked arena (ledger arena, tape); the reset " +
				"runs right after the update, so the sample and checkpoint temporaries stay until the next " +
				"step's reset; chunks freed every 10 steps; naive GEMM",
			Apply: func(o *trainer.Options) {
				o.Engine = "tape"
				o.Tape = trainer.TapeOptions{Allocator: "arena", ResetBeforeSide: true, FreeChunksEvery: arenaFreeEvery}
				o.Side = trainer.SideWork{Every: sideEvery, GenerateTokens: sideGenerateTokens}
				o.GEMM = "naive"
			},
		},
		{
			// No Expect: the note's figure is for P1 and P2 together, so
			// P2 checks it against the before state.
			Name:        "P1",
			Description: "arena reset at the end of the loop",
			Claim:       "60 GB -> 1.9 GB (97 %) with P2",
			Mechanism:   "the reset is the last thing in the step, after the side work",
			Apply:       func(o *trainer.Options) { o.Tape.ResetBeforeSide = false },
		},
		{
			Name:        "P2",
			Description: "fast GEMM instead of naive (--gemm auto)",
			Claim:       "3000-6000x faster (100 it/s); with P1, 60 GB -> 1.9 GB (97 %)",
			Expect: []Expectation{
				factor("tokens_per_sec", VersusPrevious, geomean(3000, 6000)),
				factor("peak_rss_bytes", VersusBefore, 1.9/60),
			},
			Mechanism: "the fastest GEMM compiled in instead of naive: avx2 (packed panels, OpenBLAS for small products) with -tags openblas, gonum without; the result's gemm field names the backend used",
			Apply:     func(o *trainer.Options) { o.GEMM = "auto" },
		},
	}}
}

func embeddingPlan() Plan {
	return Plan{Name: "embedding", Notes: []string{embeddingNote}, Phases: []Phase{
		{
			Name:        "before",
			Description: "tape exec, one-hot embedding backward, graphs kept",
			Claim:       "40 GB+ training memory",
			Expect:      []Expectation{absolute("peak_rss_bytes", 40e9)},
			Mechanism: "tape execution; the embedding gradient as a dense one-hot (T, V) product; every step's " +
				"graph kept reachable from a history slice",
			Apply: func(o *trainer.Options) {
				o.Engine = "tape"
				o.Tape = trainer.TapeOptions{Allocator: "heap", OneHotEmbedding: true, KeepGraphs: true}
			},
		},
		{
			// No Expect: the note's factor is for the embedding's own
			// buffers, which no result field isolates (the ledger's tape
			// component holds every op's tensors); the total's change is
			// in the table, unchecked.
			Name:        "P1",
			Description: "scatter-add embedding backward",
			Claim:       "~10x less memory for embedding lookups",
			Mechanism:   "the embedding gradient adds each position's row into wte's gradient",
			Apply:       func(o *trainer.Options) { o.Tape.OneHotEmbedding = false },
		},
		{
			Name:        "P2",
			Description: "release each step's graph",
			Claim:       "~1-2 GB total (vs 40 GB+)",
			Expect:      []Expectation{factor("peak_rss_bytes", VersusBefore, geomean(1, 2)/40)},
			Mechanism:   "no history: a step's graph is released when the step ends",
			Apply:       func(o *trainer.Options) { o.Tape.KeepGraphs = false },
		},
	}}
}

func decodePlan() Plan {
	set := func(mode string) func(*trainer.Options) { return func(o *trainer.Options) { o.Decode = mode } }
	return Plan{Name: "decode", Notes: []string{decodeNote}, Phases: []Phase{
		{
			Name:        "before",
			Description: "decode head per token, copies by value",
			Claim:       "~10 tokens/s, 12 KB allocated per token, one sync per token",
			Expect:      []Expectation{absolute("tokens_per_sec", 10)},
			Mechanism:   "each executor's LM head on a device, one row per launch, each row copied into a new buffer (decode mode per-token-copy)",
			Apply:       set("per-token-copy"),
		},
		{
			Name:        "P1",
			Description: "per token, views instead of copies",
			Claim:       "1.5-2x speedup, 50 % less memory churn",
			Expect: []Expectation{
				factor("tokens_per_sec", VersusBefore, geomean(1.5, 2)),
				factor("go_heap_alloc_bytes_per_step", VersusBefore, 0.5),
			},
			Mechanism: "decode mode per-token-view",
			Apply:     set("per-token-view"),
		},
		{
			Name:        "P2",
			Description: "per token, buffers preallocated",
			Claim:       "3-5x speedup, 95 % less memory churn",
			Expect: []Expectation{
				factor("tokens_per_sec", VersusBefore, geomean(3, 5)),
				factor("go_heap_alloc_bytes_per_step", VersusBefore, 0.05),
			},
			Mechanism: "decode mode per-token-prealloc",
			Apply:     set("per-token-prealloc"),
		},
		{
			Name:        "P3",
			Description: "whole sequence per launch",
			Claim:       "100-300x speedup (~2,500 tokens/s), one sync per sequence",
			Expect:      []Expectation{factor("tokens_per_sec", VersusBefore, geomean(100, 300))},
			Mechanism:   "decode mode batch",
			Apply:       set("batch"),
		},
	}}
}
