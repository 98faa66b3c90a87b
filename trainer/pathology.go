package trainer

import (
	"fmt"
	"math"

	"memprobe/trainer/model"
	"memprobe/trainer/osthread"
)

// Pathology switches on, one field per fix, the defects design notes 000
// and 001 describe in their 63-thread C trainer. The zero value
// is the fixed trainer and the default; package phase turns the notes'
// phases into settings of these fields. Every setting runs the same code
// and, at a given seed, the same arithmetic: the loss trajectory does not
// depend on it, only memory and time do.
type Pathology struct {
	// WorkerStackBytes > 0 runs every logical worker on an OS thread of its
	// own, created by pthread_create with a stack of this many bytes
	// (package osthread; osthread.MinStackBytes to MaxStackBytes). 0 runs
	// workers as goroutines. The stacks are reserved address space, counted
	// in the ledger as ledger.WorkerStacks; only what the threads touch is
	// resident. (Note 000 phase 1: 8 MiB, the C library's default, to 1 MiB.)
	WorkerStackBytes int64 `json:"worker_stack_bytes,omitempty"`

	// ContextWorkspaces gives every worker a context that owns a whole
	// sequence workspace (activations, backward buffers, caches) and runs
	// its sequences there, as the notes' C trainer did, instead of sharing
	// at most GOMAXPROCS executors among the workers. Context creation
	// writes every buffer (the C code memsets them), so each context's
	// workspace is resident from the start.
	ContextWorkspaces bool `json:"context_workspaces,omitempty"`

	// SphereHierarchy creates the notes' whole "kissing spheres" tree of
	// contexts, a root and then KissingNumber children per context, level
	// by level until the tree holds a context per worker beside the root:
	// 1 + 12 + 144 = 157 contexts for 63 workers. Only the workers' contexts
	// are used; the others hold their workspaces for nothing (ledger
	// ledger.WorkerContexts). Needs ContextWorkspaces. (Note 000 phase 2.)
	SphereHierarchy bool `json:"sphere_hierarchy,omitempty"`

	// CacheScale sizes the attention cache (the attention probabilities,
	// model.Acts.Att), the backward buffers (model.GradActs) and the
	// embedding cache as this factor of what one sequence needs; 0 and 1
	// are right-sized. Above 1 the caches are counted as ledger.CacheAttention
	// and ledger.CacheBackward instead of inside the activation workspace.
	// Only the first right-sized part of each is read; the rest is memory
	// sized for shapes that never occur. (Note 000 phase 3.)
	CacheScale float64 `json:"cache_scale,omitempty"`

	// ClearCaches clears every cache of a workspace, headroom included, the
	// first time the workspace runs a sequence in a step.
	ClearCaches bool `json:"clear_caches,omitempty"`

	// EmbeddingCache gives every workspace its own copy of wte (sized by
	// CacheScale), which its forward and backward read instead of the
	// parameters, refreshed after each optimizer update
	// (ledger.CacheEmbedding). Off: the workspace reads wte itself.
	EmbeddingCache bool `json:"embedding_cache,omitempty"`

	// EagerBatches materialises every batch of an epoch (inputs, targets and
	// mask as int32, B×T each) at the epoch's first step instead of filling
	// one batch per step on demand (ledger.Batches). (Note 000 phase 4.)
	EagerBatches bool `json:"eager_batches,omitempty"`

	// ModelLock serialises forward and backward behind one lock, granted in
	// sequence order (a ticket lock, so the loss is unchanged and the
	// gradient turnstile cannot deadlock). (Note 000 phase 5, "model_lock".)
	ModelLock bool `json:"model_lock,omitempty"`
}

// KissingNumber is the branching of the notes' sphere hierarchy: the
// kissing number in three dimensions, 12 spheres touching one.
const KissingNumber = 12

// MaxCacheScale bounds Pathology.CacheScale.
const MaxCacheScale = 64

func (p Pathology) validate(o *Options) error {
	if s := p.WorkerStackBytes; s != 0 {
		if !osthread.Available() {
			return osthread.ErrNoCgo
		}
		if s < osthread.MinStackBytes || s > osthread.MaxStackBytes {
			return fmt.Errorf("worker stack %d bytes out of range [%d, %d] (0: goroutine workers)", s, osthread.MinStackBytes, osthread.MaxStackBytes)
		}
	}
	if s := p.CacheScale; s != 0 && !(s >= 1 && s <= MaxCacheScale) {
		return fmt.Errorf("cache scale %g out of range [1, %d]", s, MaxCacheScale)
	}
	if p.SphereHierarchy && !p.ContextWorkspaces {
		return fmt.Errorf("sphere hierarchy: contexts exist only with per-context workspaces (ContextWorkspaces)")
	}
	if p.ContextWorkspaces && o.Executors != 0 {
		return fmt.Errorf("executors %d: with per-context workspaces every worker runs on its own context's workspace; leave executors at 0", o.Executors)
	}
	return nil
}

func (p Pathology) cacheScale() float64 {
	if p.CacheScale == 0 {
		return 1
	}
	return p.CacheScale
}

// scaled is n floats times the cache scale, rounded up.
func (p Pathology) scaled(n int) int { return int(math.Ceil(float64(n) * p.cacheScale())) }

// HierarchySize is the number of contexts in the notes' sphere hierarchy
// for threads workers: a root, then levels of KissingNumber children per
// context, until the tree has threads+1 contexts or more. 13 for 1 to 12
// workers, 157 for 13 to 156.
func HierarchySize(threads int) int {
	total, level := 1, 1
	for total < threads+1 {
		level *= KissingNumber
		total += level
	}
	return total
}

// layout is what one workspace holds, in floats.
type layout struct {
	acts     int // model.Acts, Att included
	attCache int // the attention cache: Att plus headroom (CacheScale > 1), else 0: Att is counted with acts
	grads    int // model.GradActs plus headroom
	emb      int // embedding cache (0: a view of the parameters)
}

func layoutOf(c model.Config, p Pathology) layout {
	att := c.Layers * c.Heads * c.Context * c.Context // (L, NH, T, T)
	l := layout{acts: c.ActsSize(), grads: p.scaled(c.GradActsSize())}
	if p.cacheScale() > 1 {
		l.attCache = p.scaled(att)
	}
	if p.EmbeddingCache {
		l.emb = p.scaled(c.Vocab * c.Dim)
	}
	return l
}

// Counts are what the trainer built and did that the switches change:
// deterministic quantities, the same on every run of a configuration.
type Counts struct {
	Workers          int   `json:"workers"`            // logical workers
	WorkerThreads    int   `json:"worker_threads"`     // OS threads created for workers (0: goroutine workers)
	WorkerStackBytes int64 `json:"worker_stack_bytes"` // stack reserved per worker thread, as the C library reports it
	Contexts         int   `json:"contexts"`           // worker contexts created (0: executors own the workspaces)
	UnusedContexts   int   `json:"unused_contexts"`    // contexts whose workspace has run no sequence: no worker (sphere hierarchy), or a worker with no sequence (id ≥ B)
	IdleWorkers      int   `json:"idle_workers"`       // workers that have run no sequence (threads beyond B never do)
	Workspaces       int   `json:"workspaces"`         // sequence workspaces that run sequences (contexts' or executors')
	BatchBuffers     int   `json:"batch_buffers"`      // batches held at once
	BatchRowFills    int64 `json:"batch_row_fills"`    // sequences written into batches so far
	ModelLockHolds   int64 `json:"model_lock_holds"`   // times the model lock was taken
	CacheClears      int64 `json:"cache_clears"`       // workspace cache clears (ClearCaches)
	EmbeddingCopies  int64 `json:"embedding_copies"`   // embedding-cache refreshes
	SideWorkRuns     int   `json:"side_work_runs"`     // sample + checkpoint rounds (Options.Side)
	TapeGraphs       int64 `json:"tape_graphs"`        // sequence graphs the tape built (engine "tape")
	TapeGraphsKept   int   `json:"tape_graphs_kept"`   // graphs held in the history (Tape.KeepGraphs)
}
