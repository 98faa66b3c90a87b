package memmodel

import (
	"fmt"
	"math"

	"memprobe/ledger"
	"memprobe/schema"
)

// The sizes below are the model's own closed forms, derived from the
// architecture (llm.c's train_gpt2.c with the LM head tied to wte), not
// calls into the trainer: the model predicts, the ledger measures what the
// trainer made, and a disagreement is a finding. V, C, L, NH, FF, T, B are
// vocab, channels, layers, heads, feed-forward width, context and batch.

// numParams is P = V·C (wte, also the LM head) + T·C (wpe) + L·(2C ln1 +
// 3C·C + 3C qkv + C·C + C attproj + 2C ln2 + FF·C + FF fc + C·FF + C
// fcproj) + 2C (final layer norm).
func numParams(m schema.Model) int64 {
	V, C, L, FF, T := int64(m.Vocab), int64(m.Dim), int64(m.Layers), int64(m.FF), int64(m.Context)
	return V*C + T*C + L*(4*C*C+2*C*FF+9*C+FF) + 2*C
}

// actsSize is one sequence's forward activations, in floats: the embedding
// and the final layer norm's output (2·T·C), per layer the two layer norms'
// outputs and statistics, qkv, the attention output and projection, two
// residuals, the feed-forward hidden state before and after GELU and its
// projection (T·(10C + 4 + 2FF)), the attention probabilities (NH·T·T), the
// final norm's statistics and the losses (3T), logits and probabilities
// (2·T·V).
func actsSize(m schema.Model) int {
	V, C, L, NH, FF, T := m.Vocab, m.Dim, m.Layers, m.Heads, m.FF, m.Context
	return 2*T*C + L*T*(10*C+4+2*FF) + L*NH*T*T + 3*T + 2*T*V
}

// attSize is the attention probabilities of all layers, L·NH·T·T floats.
func attSize(m schema.Model) int { return m.Layers * m.Heads * m.Context * m.Context }

// gradActsSize is one sequence's backward workspace: walking the layers in
// reverse it needs the residual stream's gradient and one layer's
// temporaries: 3·T·C (residual, layer-norm and attention-output
// gradients), 3·T·C (qkv), 2·T·FF (feed-forward before and after GELU),
// T·T (one head's attention), T·V (logits) and V·C (the sequence's wte
// gradient, summed before it joins the shared one).
func gradActsSize(m schema.Model) int {
	V, C, FF, T := m.Vocab, m.Dim, m.FF, m.Context
	return 6*T*C + 2*T*FF + T*T + T*V + V*C
}

// kissingNumber is the branching of the notes' sphere hierarchy of worker
// contexts; hierarchySize the contexts a tree of that branching needs to
// give every worker one below the root (1 + 12 + 144 = 157 for 63).
const kissingNumber = 12

func hierarchySize(threads int) int {
	total, level := 1, 1
	for total < threads+1 {
		level *= kissingNumber
		total += level
	}
	return total
}

// outStride is the decode head's output record per row: the chosen token
// and the row's loss, one float each.
const outStride = 2

// normChunk is the gradient norm's chunk, in parameters: the optimizer
// sums the squares of each chunk apart (trainer/model.NormChunk).
const normChunk = 1 << 16

// decodeHost is one decode head's host buffers in bytes, and their
// formula: the greedy tokens (T uint16); the decoder's staging, which
// the per-token-copy mode makes fresh per token and the others once: the
// targets as float32 (T, not per-token-copy), the output records (T ×
// outStride: prealloc and batch), one hidden row and one probability row
// (C and V: prealloc); and on the cpu device the softmax's one-row
// scratch (V).
func (p Pathologies) decodeHost(c schema.Model, device string) (int64, string) {
	T, C, V := int64(c.Context), int64(c.Dim), int64(c.Vocab)
	floats := int64(0)
	formula := "2 B × T"
	switch p.Decode {
	case "per-token-view":
		floats, formula = T, formula+" + 4 B × T"
	case "per-token-prealloc":
		floats, formula = T+T*outStride+C+V, formula+fmt.Sprintf(" + 4 B × (T·(1 + %d) + C + V)", outStride)
	case "batch":
		floats, formula = T+T*outStride, formula+fmt.Sprintf(" + 4 B × T·(1 + %d)", outStride)
	}
	if device == "" || device == "cpu" {
		floats += V
		formula += " + 4 B × V (cpu scratch)"
	}
	return 2*T + 4*floats, formula
}

// Pathologies are the switches that change what the trainer allocates: the
// design notes' defects (schema.Pathology, notes 000 and 001) and the
// device decode head (note 003). The zero value is the fixed trainer.
type Pathologies struct {
	schema.Pathology
	// Decode is the decode head's mode ("" for none): each workspace then
	// holds device buffers (ledger.DeviceBuffers).
	Decode string
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

func (p Pathologies) workspace(c schema.Model) workspace {
	att := attSize(c) // (L, NH, T, T)
	w := workspace{acts: actsSize(c)}
	if p.scale() > 1 {
		w.acts -= att
		w.attCache = p.scaled(att)
	}
	if g := p.scaled(gradActsSize(c)); g > gradActsSize(c) {
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
func (w workspace) bytes(c schema.Model) int64 {
	return 4*int64(w.acts+w.attCache+w.grads+w.bwdCache+w.emb) + 4*int64(c.Context)
}

// workspaces returns how many workspaces run sequences and how many
// contexts hold one for nothing (the sphere hierarchy's extra contexts).
func (p Pathologies) workspaces(in Input) (used, unused int) {
	threads := in.Config.Threads
	if !p.ContextWorkspaces {
		n, _ := Executors(in)
		return n, 0
	}
	if p.SphereHierarchy {
		return threads, hierarchySize(threads) - threads
	}
	return threads, 0
}

// components returns the workspace components (replacing the fixed
// trainer's activations and activation_grads), then the batches, the
// unused contexts, the worker stacks and the device buffers.
func components(in Input) []Component {
	p := Pathologies{Pathology: in.Config.Pathology, Decode: in.Config.Decode}
	c := in.Config.Model
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

	// The step's sums: each sequence's mean loss (B float32) and the
	// gradient norm's chunk sums (ceil(P / normChunk) float64).
	P := numParams(c)
	chunks := (P + normChunk - 1) / normChunk
	add(ledger.StepSums, 4*int64(c.Batch)+8*chunks, "4 B × B (%d) + 8 B × ceil(P / %d) (%d)", c.Batch, normChunk, chunks)

	if unused > 0 {
		add(ledger.WorkerContexts, int64(unused)*w.bytes(c),
			"unused contexts (%d of %d in the sphere hierarchy) × workspace (%d B)", unused, unused+used, w.bytes(c))
	}
	if s := p.WorkerStackBytes; s > 0 {
		add(ledger.WorkerStacks, int64(in.Config.Threads)*s, "threads (%d) × stack reservation (%d B)", in.Config.Threads, s)
	}
	if p.Decode != "" {
		rows := 1
		if p.Decode == "batch" {
			rows = c.Context
		}
		per := int64(c.Vocab*c.Dim + rows*c.Dim + rows*c.Vocab + rows + rows*outStride)
		add(ledger.DeviceBuffers, n*per*4, "%s × (V·C + rows·(C + V + 1 + %d)) (%d, rows %d) × 4 B", who, outStride, per, rows)
		host, formula := p.decodeHost(c, in.Config.Device)
		add(ledger.DecodeHost, n*host, "%s × (%s) (%d B)", who, formula, host)
	}
	return out
}
