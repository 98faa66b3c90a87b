package memmodel

import (
	"fmt"
	"math"

	"memprobe/probe/ledger"
	"memprobe/trainer"
	"memprobe/trainer/device"
	"memprobe/trainer/model"
)

// Pathologies are the trainer switches that change what it allocates:
// trainer.Pathology (design notes 000 and 001) and the device decode head
// (note 003). The zero value is the fixed trainer.
type Pathologies struct {
	trainer.Pathology
	// Decode is the decode head's mode ("" for none): each workspace then
	// holds device buffers (ledger.DeviceBuffers).
	Decode string
}

func pathologiesOf(o trainer.Options) Pathologies {
	return Pathologies{Pathology: o.Pathology, Decode: o.Decode}
}

// workspace is what one sequence workspace holds, in floats, as the
// trainer lays it out (trainer/pathology.go, layoutOf and newExecutor).
type workspace struct {
	acts     int // activations outside the attention cache
	attCache int // attention cache with headroom (CacheScale > 1), else 0
	grads    int // backward workspace (activation_grads) when right-sized
	bwdCache int // backward workspace with headroom (CacheScale > 1), else 0
	emb      int // embedding cache (EmbeddingCache), else 0
}

func (p Pathologies) scale() float64 {
	if p.CacheScale == 0 {
		return 1
	}
	return p.CacheScale
}

// scaled is n × CacheScale rounded up, as the trainer sizes a cache.
func (p Pathologies) scaled(n int) int { return int(math.Ceil(float64(n) * p.scale())) }

func (p Pathologies) workspace(c model.Config) workspace {
	att := c.Layers * c.Heads * c.Context * c.Context // (L, NH, T, T)
	w := workspace{acts: c.ActsSize()}
	if p.scale() > 1 {
		w.acts -= att
		w.attCache = p.scaled(att)
	}
	if g := p.scaled(c.GradActsSize()); g > c.GradActsSize() {
		w.bwdCache = g
	} else {
		w.grads = g
	}
	if p.EmbeddingCache {
		w.emb = p.scaled(c.Vocab * c.Dim)
	}
	return w
}

// bytes is the whole workspace, its token buffers (2 × T uint16) included.
func (w workspace) bytes(c model.Config) int64 {
	return 4*int64(w.acts+w.attCache+w.grads+w.bwdCache+w.emb) + 4*int64(c.Context)
}

// workspaces returns how many workspaces run sequences and how many
// contexts hold one for nothing (the sphere hierarchy's extra contexts).
func (p Pathologies) workspaces(in Input) (used, unused int) {
	if !p.ContextWorkspaces {
		return in.Executors, 0
	}
	if p.SphereHierarchy {
		return in.Threads, trainer.HierarchySize(in.Threads) - in.Threads
	}
	return in.Threads, 0
}

// components returns the workspace components (replacing the fixed
// trainer's activations and activation_grads), then the batches, the
// unused contexts, the worker stacks and the device buffers.
func (p Pathologies) components(in Input) []Component {
	c := in.Config
	w := p.workspace(c)
	used, unused := p.workspaces(in)
	n := int64(used)
	var out []Component
	add := func(name string, bytes int64, formula string, args ...any) {
		out = append(out, Component{Name: name, Bytes: bytes, PeakBytes: bytes, Formula: fmt.Sprintf(formula, args...)})
	}
	who := fmt.Sprintf("executors (%d)", used)
	if p.ContextWorkspaces {
		who = fmt.Sprintf("worker contexts (%d)", used)
	}
	if w.attCache > 0 {
		add(ledger.Activations, n*int64(w.acts)*4, "%s × (ActsSize − L·NH·T·T) (%d) × 4 B", who, w.acts)
		add(ledger.CacheAttention, n*int64(w.attCache)*4, "%s × ceil(L·NH·T·T × scale %g) (%d) × 4 B", who, p.scale(), w.attCache)
	} else {
		add(ledger.Activations, n*int64(w.acts)*4, "%s × ActsSize (%d) × 4 B", who, w.acts)
	}
	if w.bwdCache > 0 {
		add(ledger.CacheBackward, n*int64(w.bwdCache)*4, "%s × ceil(GradActsSize × scale %g) (%d) × 4 B", who, p.scale(), w.bwdCache)
	} else {
		add(ledger.ActivationGrads, n*int64(w.grads)*4, "%s × GradActsSize (%d) × 4 B", who, w.grads)
	}
	if w.emb > 0 {
		add(ledger.CacheEmbedding, n*int64(w.emb)*4, "%s × ceil(V·C × scale %g) (%d) × 4 B", who, p.scale(), w.emb)
	}

	// Batches: the store's int32 inputs, targets and mask (B, T) each, one
	// batch or (EagerBatches) every batch of an epoch, plus each running
	// workspace's two uint16 token rows (T).
	BT := int64(c.Batch) * int64(c.Context)
	nb := int64(1)
	if p.EagerBatches {
		starts := int64(in.DatasetTokens - c.Context - 1)
		nb = (starts + BT - 1) / BT
		add(ledger.Batches, nb*3*BT*4+n*4*int64(c.Context),
			"ceil((tokens − T − 1) / (B·T)) (%d) batches × 3 × B·T (%d) × 4 B + %s × 2 × T × 2 B", nb, BT, who)
	} else {
		add(ledger.Batches, 3*BT*4+n*4*int64(c.Context), "3 × B·T (%d) × 4 B + %s × 2 × T × 2 B", BT, who)
	}

	if unused > 0 {
		add(ledger.WorkerContexts, int64(unused)*w.bytes(c),
			"unused contexts (%d of %d in the sphere hierarchy) × workspace (%d B)", unused, unused+used, w.bytes(c))
	}
	if s := p.WorkerStackBytes; s > 0 {
		add(ledger.WorkerStacks, int64(in.Threads)*s, "threads (%d) × stack reservation (%d B)", in.Threads, s)
	}
	if p.Decode != "" {
		rows := 1
		if p.Decode == "batch" {
			rows = c.Context
		}
		per := int64(c.Vocab*c.Dim + rows*c.Dim + rows*c.Vocab + rows + rows*device.OutStride)
		add(ledger.DeviceBuffers, n*per*4, "%s × (V·C + rows·(C + V + 1 + %d)) (%d, rows %d) × 4 B", who, device.OutStride, per, rows)
	}
	return out
}
