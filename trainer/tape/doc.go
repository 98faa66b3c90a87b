// Package tape is the op-by-op execution mode of the reference trainer: an
// autograd tape over the same model as package model (the same Params
// layout and initialisation, the same nn kernels), where every op of a
// sequence's forward pass allocates its output from an Allocator and
// records a node with its inputs, its output and its backward. It exists to
// reproduce, and measure the fixes of, the memory pathologies of the design
// notes that only a tape has: the arena of note 002 and the one-hot
// embedding and retained graphs of note 004. The static pass (model.Forward,
// model.Backward) allocates nothing per step and stays the trainer's default.
//
// # Graph
//
// Forward(g, c, p, inputs, targets, alloc, o) runs one sequence and returns a
// *Graph and the mean loss. The ops, in forward order: embedding; per layer
// layernorm, matmul (qkv), attention, matmul (attproj), residual, layernorm,
// matmul (fc), gelu, matmul (fcproj), residual; the final layernorm, the LM
// head matmul (tied to wte) and softmax-cross-entropy: 1 + 10·L + 3 nodes.
// Each op calls the fast nn kernel model.Forward calls, on tensors from the
// allocator, so the loss is the same bits as model.Forward's.
//
// (*Graph).Backward(grads, dloss, ts) walks the tape in reverse. A tensor's
// gradient is taken from the allocator, zeroed, when the first node that
// reads the tensor runs its backward; the nodes accumulate into it as the nn
// kernels do (a residual passes its gradient on by copy the first time). A
// node with parameters adds their gradients into grads directly, between
// ts.Enter(slot) and ts.Leave(slot), with model.Backward's slots: SlotLNF for
// the final layernorm, LayerSlot(l)+k for layer l (k = 0 fcproj, 1 fc, 2 ln2,
// 3 attproj, 4 qkv, 5 ln1) and SlotEncoder for wpe and wte. wte is read twice
// (LM head and embedding), so its gradient collects in a (V, C) buffer of the
// graph and is added into grads.WTE by the embedding's backward, the last
// node, under SlotEncoder after the embedding's own contribution: exactly
// what model.Backward does with GradActs.DWTE. The nodes run the same
// kernels in the same order on the same values as model.Backward, so every
// gradient is the same bits, for one sequence or for several summed in
// sequence order through the trainer's ordered turnstile (tests).
//
// (*Graph).Release drops the graph's references; with a Heap allocator it
// also records the frees. A graph that is never released keeps all its
// tensors (forward values, caches and gradients, Bytes()) alive.
//
// # Options
//
// OneHotEmbedding is design note 004's embedding: Forward builds the dense
// one-hot matrix of the tokens (T, V) from the allocator and keeps it in the
// graph; Backward computes dwte += onehotᵀ · dout with one GEMM, V·T·C
// multiply-adds and T·V·4 more bytes per graph, where the default
// scatter-adds T rows of C. Both give the same gradient up to the order of
// the additions into a row of wte that two positions share: the GEMM sums a
// token's positions, then adds the LM head's part; the scatter adds them to
// it one at a time. The tests bound the difference at 1e-6 of the largest
// wte gradient and measure below 1e-7 of it with the naive and openblas
// backends (a few rows of repeated tokens differ) and 0 with gonum, whose
// GEMM adds each product into C in position order like the scatter. Every
// other parameter's gradient stays the same bits.
//
// # Allocators
//
// Heap makes each tensor and counts it in a ledger account (ledger.Tape):
// Alloc when made, Free when its graph is released. Graphs kept across steps
// (note 004's "computation graphs accumulate") show as an account that
// grows by one graph's Bytes per step.
//
// Arena is a chunked bump allocator counted in a ledger account
// (ledger.Arena) by the bytes of the chunks it holds. Its semantics:
//
//   - Float32s bumps a pointer through the held chunks, taking a new chunk
//     (chunkBytes, or the request's size if larger) when a request does not
//     fit in the rest of the current one. Slices come zeroed.
//   - Begin opens the iteration frame at the current bump position.
//   - Reset closes the frame and rewinds the pointer to where it was opened.
//     It cannot rewind below it: memory allocated before Begin has no owner
//     that could tell the arena it is dead, so the arena keeps it. With no
//     frame open Reset rewinds to the start.
//   - ResetAll rewinds to the start whatever is open.
//   - ReleaseChunks returns the chunks above the pointer to the heap. Until
//     then a rewound arena keeps its chunks and reuses them: HeldBytes only
//     drops when chunks are released.
//   - Release of a graph built on an arena frees nothing; its memory comes
//     back at the reset that rewinds below it. Backward panics on a graph
//     whose arena was reset after its Forward.
//
// # The loop of design note 002
//
// ArenaLoop runs a training loop's iterations over an Arena: Begin, the
// training step, the side work (sample generation through Sample, a
// checkpoint snapshot through StageCheckpoint, both from the same arena),
// and a reset point, which is Reset, or ResetAll then ReleaseChunks on every
// tenth iteration (the note's "aggressive memory freeing every 10
// iterations"). Where the reset point sits is the whole difference:
//
//	before (the note's bug, ResetBeforeSideWork):
//	  Begin; step; Reset; Sample; StageCheckpoint
//	fix (ResetAtEnd):
//	  Begin; step; Sample; StageCheckpoint; Reset
//
// With the fix the side work is allocated inside the frame and the reset
// rewinds it with the step's graphs: the arena holds one iteration's worth
// (step + side work) for ever. Before, the side work is allocated after the
// frame closed, below the next iteration's Begin, where no Reset can reach:
// each iteration leaves its side work behind (S bytes: n forward graphs of
// the sample plus the 3·P-float staging buffer) and InUseBytes grows by S per
// iteration until the periodic ResetAll, ten iterations' worth at the peak.
// Nothing is padded: the growth is the memory the side work really used,
// kept because of where the reset was called. Note that with a reset that
// always rewinds to the start (a plain arena: Reset with no Begin) the order
// makes no difference, because the same allocations lie between any two
// consecutive resets; the note's pathology needs the frame.
//
// How the trainer calls it, per iteration (one step of B sequences):
//
//	loop := &tape.ArenaLoop{Arena: arena, Order: order, ReleaseEvery: tape.DefaultReleaseEvery}
//	loop.Iteration(func() {
//	    // each executor, each sequence b (the trainer's ordered turnstile):
//	    gr, loss := tape.Forward(g, cfg, params, in[b], tg[b], arena, opts)
//	    gr.Backward(grads, 1/float32(B*T), turnstile)
//	    gr.Release()
//	    // then the optimizer update (no arena memory)
//	}, func() {
//	    tokens := tape.Sample(g, cfg, params, prompt, n, seed, arena, opts)
//	    buf := tape.StageCheckpoint(arena, params.Memory, m.Memory, v.Memory)
//	    // write buf; keep nothing from the arena past this function
//	})
//
// # Place in the pipeline
//
// The trainer's tape mode (a colleague's) calls Forward, Backward and
// Release per sequence in place of model.Forward and model.Backward; the
// probe reads the ledger accounts "tape" and "arena" beside the trainer's
// static components.
package tape
