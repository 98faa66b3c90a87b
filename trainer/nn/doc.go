// Package nn holds the per-sequence layer kernels of the reference GPT-2
// trainer, a Go port of the forward and backward passes of Karpathy's llm.c
// (train_gpt2.c).
//
// # Layout
//
// Every kernel works on one sequence of T tokens at a time; there is no batch
// dimension (the trainer runs sequences one after another, or one per worker).
// Tensors are flat, row-major []float32 slices whose shapes are given in the
// doc comments with these short names:
//
//	T   tokens in the sequence
//	C   channels (model width)
//	NH  attention heads; hs = C/NH channels per head
//	V   vocabulary size
//	OC  output channels of a matmul
//
// Token ids and targets are uint16. Arguments come in llm.c order: outputs
// first, then inputs, then dimensions. Slices may be longer than the shape
// says (only the prefix is used); a shorter slice panics.
//
// # Accumulate convention
//
// Forward kernels overwrite their outputs (out, and the caches they keep for
// backward: mean, rstd, att, probs). Backward kernels ACCUMULATE into every
// gradient buffer (dinp += ..., dweight += ...), as llm.c does, so that a
// parameter used by several positions or a residual stream fed to two
// branches sums its gradients; the caller zeroes the gradients once per
// step. The only workspace that is overwritten is the scratch slice of
// AttentionBackward, whose contents are undefined afterwards.
//
// The trainer's pass also uses variants that save it a clear or order its
// gradient additions: GeluBackwardInto, AttentionBackwardInto and
// SoftmaxCrossEntropyBackwardInto overwrite their gradient (dinp = ...);
// MatmulBackwardInput and MatmulBackwardWeight are the two halves of
// MatmulBackward with a BLAS-style beta (0 overwrites, 1 accumulates), so
// that the input gradient can be computed outside a turnstile slot and only
// the weight gradient inside; Accumulate adds one buffer into another;
// AdamWUpdate is the optimizer's element loop.
//
// # Fast and naive pairs
//
// Every kernel X comes with XNaive, of the same signature. XNaive is the plain
// loop of llm.c, accumulating in float64 wherever that makes the reference
// more exact, and never calling a gemm.Backend (MatmulNaive and the attention
// references take one and ignore it). XNaive may allocate.
//
// X is the kernel the trainer runs: float32 throughout, allocation-free
// (apart from whatever its gemm.Backend allocates), single-threaded (the
// trainer parallelises at one level only: across sequences, or inside the gemm
// backend), and routing every matrix product through its gemm.Backend
// argument. Kernels keep no state, so concurrent calls on disjoint buffers are
// safe.
//
// # Speed
//
// The elementwise and row work runs on the vector primitives of simd.go:
// AVX2+FMA assembly (simd_amd64.s, 8 floats per instruction) where the CPU
// has it, the same loops in portable Go elsewhere; both paths are tested. The
// fast GELU uses a float32 rational approximation of tanh (|error| < 5e-7
// against math.Tanh on all of float32), the softmaxes a Cephes-style exp
// (relative error < 1.5e-7 on [-87.3, 88], exactly 0 below -87.5:
// TestExp). Causal attention computes only the blocks of attBlock rows and
// columns on and below the diagonal of its T×T products (62.5% of the
// square at T=128).
//
// The tests compare X with XNaive on seeded random inputs, with every
// registered gemm backend and both vector paths, at |fast-naive| <= 1e-5 +
// 1e-4*|naive| per element (residuals and Accumulate bit for bit), and check every backward, fast and naive, against central finite
// differences of its forward (gradcheck_test.go).
package nn
