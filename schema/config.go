package schema

// Config is the whole configuration of one job: enough to run it again
// (job.OptionsFromConfig turns it back into options). Zero values are
// written out, never omitted, so that every result has the same keys.
// Defaults are resolved: a result says the warm-up and sampler period it
// used, not "default".
type Config struct {
	// Preset is the named shape the model started from (--preset: seed,
	// tiny, micro); Model is the shape after the per-field overrides, and
	// is what counts.
	Preset string `json:"preset"`
	// Model's fields (vocab, dim, layers, heads, ff, context, batch) sit
	// directly in "config", where v2 had them.
	Model
	Optimizer Optimizer `json:"optimizer"`
	Threads   int       `json:"threads"`   // logical workers
	Executors int       `json:"executors"` // asked for; 0: min(threads, GOMAXPROCS, batch)

	// Plan and Phase name the documented phase selected (--plan, --phase;
	// both "" when none). The switches below are what the phase set, with
	// any explicit knob applied over it: they, not the names, say what ran.
	Plan      string    `json:"plan"`
	Phase     string    `json:"phase"`
	Pathology Pathology `json:"pathology"`
	// Engine is how a sequence runs: "static" or "tape" ("" is static).
	Engine string   `json:"engine"`
	Tape   Tape     `json:"tape"`
	Side   SideWork `json:"side_work"`
	// Decode is the decode mode of the LM head ("" runs it on the host);
	// Device the decode head's device ("" or "cpu", "cuda").
	Decode string `json:"decode"`
	Device string `json:"device"`
	// GEMM is the backend asked for ("auto" or "" for the fastest compiled
	// in); GEMMUsed is the one that ran. A re-run asks for GEMM: pin
	// GEMMUsed to get the same kernels on another build or machine.
	GEMM     string `json:"gemm"`
	GEMMUsed string `json:"gemm_used"`

	Data     string `json:"data"`      // data spec: "synthetic:SIZE" or a text file
	DataSeed uint64 `json:"data_seed"` // seed of the synthetic corpus
	Seed     uint64 `json:"seed"`      // parameter initialisation and sampling
	Steps    int    `json:"steps"`     // optimizer steps asked for
	// Resume is the checkpoint the job started from ("" for none);
	// GenerateTokens the tokens generated after training (--generate).
	Resume         string `json:"resume"`
	GenerateTokens int    `json:"generate_tokens"`

	// Instruments says whether the instruments ran (--no-instruments
	// turns them off). WarmupSteps are the steps left out of the
	// steady-state per-step costs (0: none); SampleIntervalMs is the RSS
	// sampler's period and SampleMaxPoints the bound on its timeline.
	Instruments      bool    `json:"instruments"`
	WarmupSteps      int     `json:"warmup_steps"`
	SampleIntervalMs float64 `json:"sample_interval_ms"`
	SampleMaxPoints  int     `json:"sample_max_points"`
}

// Pathology is the design notes' defects switched on (trainer.Pathology;
// all zero is the fixed trainer). docs/phases.md says what each does.
type Pathology struct {
	// WorkerStackBytes > 0 runs each worker on a pthread with this stack
	// (0: goroutine workers).
	WorkerStackBytes  int64 `json:"worker_stack_bytes"`
	ContextWorkspaces bool  `json:"context_workspaces"`
	SphereHierarchy   bool  `json:"sphere_hierarchy"`
	// CacheScale sizes the caches as this factor of right-sized (0 and 1:
	// right-sized).
	CacheScale     float64 `json:"cache_scale"`
	ClearCaches    bool    `json:"clear_caches"`
	EmbeddingCache bool    `json:"embedding_cache"`
	EagerBatches   bool    `json:"eager_batches"`
	ModelLock      bool    `json:"model_lock"`
}

// Tape is the tape engine's options (trainer.TapeOptions; exec "tape").
type Tape struct {
	Allocator       string `json:"allocator"` // "arena" ("" is arena) or "heap"
	ResetBeforeSide bool   `json:"reset_before_side"`
	// FreeChunksEvery returns the arena's chunks every this many steps
	// (0: never).
	FreeChunksEvery int  `json:"free_chunks_every_steps"`
	OneHotEmbedding bool `json:"one_hot_embedding"`
	KeepGraphs      bool `json:"keep_graphs"`
}

// SideWork is the work beside training (trainer.SideWork): every Every
// steps, generate GenerateTokens tokens and serialise a checkpoint (0: none).
type SideWork struct {
	Every          int `json:"every_steps"`
	GenerateTokens int `json:"generate_tokens"`
}
