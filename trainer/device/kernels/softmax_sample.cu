// softmax_sample: the SoftmaxSample kernel of the cuda device, one thread
// block per row. It follows softmaxSampleRows in trainer/device/device.go;
// the sums run in a different order and exp/log come from the PTX
// approximations (a few float32 ulps), so probabilities and losses agree with
// the host to a relative 1e-5 or so, and a sampled token can differ from the
// host's only when u falls within rounding of a cumulative boundary.
//
// Compiled by gen.sh with clang -nocudainc -nocudalib: there are no CUDA
// headers and no libdevice, so the few qualifiers and builtins it needs are
// spelled out here and the maths uses only NVVM builtins that become single
// PTX instructions (the PTX must not call anything).
//
// Launch: grid (rows, 1, 1), block (SOFTMAX_SAMPLE_BLOCK, 1, 1), no dynamic
// shared memory. Any block of n x 1 x 1 threads with 1 <= n <= 1024 computes
// the same result up to the order of its sums (the PTX carries .maxntid 1024,
// so the driver refuses more).
//
// Why 1024 and not 256: a row is one block, so one row runs on one SM. With
// a row at a time (the per-token decode modes) at V = 50257, an H100 spent
// about 100 us per row in this kernel with 256 threads (measured as what a
// per-token step kept when the product shrank to C = 96; docs/phases.md),
// its loads waiting on latency with only 8 warps in flight on 1 of 132 SMs.
// 32 warps keep four times as many loads in flight; the batched modes, a
// block per row over many rows, fill the GPU either way.

#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __shared__ __attribute__((shared))
#define __launch_bounds__(n) __attribute__((launch_bounds(n)))

#define SOFTMAX_SAMPLE_BLOCK 1024

#define INT_MAX_ 0x7fffffff
#define INF_ __builtin_inff()
#define LOG2E_ 1.4426950408889634f
#define LN2_ 0.6931471805599453f
#define LN2_HI_ 0.693145751953125f      /* 0x3f317200: 15 significant bits */
#define LN2_LO_ 1.428606765330187e-06f  /* ln 2 - LN2_HI_ */

typedef unsigned long long u64;

// Block-wide scratch. Every helper below starts with a barrier, so a helper
// never overwrites values that another thread may still be reading from the
// previous one.
static __shared__ float s_f[SOFTMAX_SAMPLE_BLOCK];
static __shared__ int s_i[SOFTMAX_SAMPLE_BLOCK];

static __device__ __attribute__((always_inline)) unsigned thread_id() { return __nvvm_read_ptx_sreg_tid_x(); }
static __device__ __attribute__((always_inline)) unsigned block_threads() { return __nvvm_read_ptx_sreg_ntid_x(); }

// exp_f is expf to about 2 ulps: x = j ln2 + f with |f| <= ln2/2 (Cody-Waite,
// exact for |j| < 512), e^f from ex2.approx, then the scale 2^j applied in
// two exact halves so that a subnormal result is rounded once. Going straight
// to ex2.approx(x log2 e) would lose about |x| ulps to the rounding of the
// product. NaN stays NaN; -inf and anything below -104 give 0.
static __device__ __attribute__((always_inline)) float exp_f(float x) {
	if (!(x >= -104.0f)) {
		return x != x ? x : 0.0f;
	}
	if (x > 89.0f) {
		return INF_;
	}
	float j = __builtin_rintf(x * LOG2E_);
	float f = __builtin_fmaf(j, -LN2_HI_, x);
	f = __builtin_fmaf(j, -LN2_LO_, f);
	float e = __nvvm_ex2_approx_f(f * LOG2E_);
	int k = (int)j;            // in [-150, 129]
	int k1 = k >> 1;           // floor(k/2): k1, k - k1 in [-75, 65]
	int k2 = k - k1;
	e *= __builtin_bit_cast(float, (k1 + 127) << 23);
	return e * __builtin_bit_cast(float, (k2 + 127) << 23);
}

// log_f is logf through lg2.approx (absolute error about 2^-22 near 1,
// relative 2^-22 elsewhere); the kernel only takes the log of sums >= 1.
static __device__ __attribute__((always_inline)) float log_f(float x) {
	return __nvvm_lg2_approx_f(x) * LN2_;
}

// uniform01 is device.Uniform: SplitMix64 of seed and pos, 53 bits in [0, 1).
static __device__ __attribute__((always_inline)) double uniform01(u64 seed, u64 pos) {
	u64 z = seed + (pos + 1ULL) * 0x9E3779B97F4A7C15ULL;
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	z ^= z >> 31;
	return (double)(z >> 11) / 9007199254740992.0;
}

// block_sum returns the sum of v over the block's n threads (tree in shared
// memory; valid for any 1 <= n <= 1024). Every thread gets the result.
static __device__ __attribute__((always_inline)) float block_sum(float v, unsigned tid, unsigned n) {
	__syncthreads();
	s_f[tid] = v;
	__syncthreads();
	for (unsigned s = SOFTMAX_SAMPLE_BLOCK / 2; s > 0; s >>= 1) {
		if (tid < s && tid + s < n) {
			s_f[tid] += s_f[tid + s];
		}
		__syncthreads();
	}
	return s_f[0];
}

// block_min returns the minimum of v over the block's n threads.
static __device__ __attribute__((always_inline)) int block_min(int v, unsigned tid, unsigned n) {
	__syncthreads();
	s_i[tid] = v;
	__syncthreads();
	for (unsigned s = SOFTMAX_SAMPLE_BLOCK / 2; s > 0; s >>= 1) {
		if (tid < s && tid + s < n) {
			int o = s_i[tid + s];
			if (o < s_i[tid]) {
				s_i[tid] = o;
			}
		}
		__syncthreads();
	}
	return s_i[0];
}

// block_argmax reduces (value, index) pairs to the largest value, the smaller
// index on equal values; a NaN value never wins against a slot it is compared
// to, and slot 0 is never replaced by a NaN. *v and *i receive the result in
// every thread.
static __device__ __attribute__((always_inline)) void block_argmax(float* v, int* i, unsigned tid, unsigned n) {
	__syncthreads();
	s_f[tid] = *v;
	s_i[tid] = *i;
	__syncthreads();
	for (unsigned s = SOFTMAX_SAMPLE_BLOCK / 2; s > 0; s >>= 1) {
		if (tid < s && tid + s < n) {
			float a = s_f[tid], b = s_f[tid + s];
			int ia = s_i[tid], ib = s_i[tid + s];
			if (b > a || (b == a && ib < ia)) {
				s_f[tid] = b;
				s_i[tid] = ib;
			}
		}
		__syncthreads();
	}
	*v = s_f[0];
	*i = s_i[0];
}

// block_scan gives each thread the exclusive and inclusive prefix sums of v
// over threads 0..tid (Hillis-Steele in shared memory) and the block total.
// excl of thread t+1 is bit for bit incl of thread t.
static __device__ __attribute__((always_inline)) void block_scan(float v, unsigned tid, unsigned n, float* excl, float* incl, float* total) {
	__syncthreads();
	s_f[tid] = v;
	__syncthreads();
	for (unsigned off = 1; off < n; off <<= 1) {
		float add = tid >= off ? s_f[tid - off] : 0.0f;
		__syncthreads();
		if (tid >= off) {
			s_f[tid] += add;
		}
		__syncthreads();
	}
	*incl = s_f[tid];
	*excl = tid > 0 ? s_f[tid - 1] : 0.0f;
	*total = s_f[n - 1];
}

// softmax_sample: for row r = blockIdx.x of logits (rows, V), pick a token
// (argmax, first on ties, when temperature <= 0; else a draw from
// softmax(row/temperature) with uniform01(seed, pos + r)), replace the row by
// softmax(row) and write out[2r] = token, out[2r+1] = loss: 0 without
// targets, log(sum) + max - row[t] for a target t that is an integer in
// [0, V), NaN for any other target.
extern "C" __global__ __launch_bounds__(SOFTMAX_SAMPLE_BLOCK) void softmax_sample(
	float* out, float* logits, const float* targets,
	int rows, int V, float temperature, u64 seed, u64 pos) {
	const unsigned tid = thread_id();
	const unsigned n = block_threads();
	const int r = (int)__nvvm_read_ptx_sreg_ctaid_x();
	// Uniform across the block: either every thread returns or none does,
	// so no barrier below is missed by part of the block.
	if (r >= rows || V <= 0) {
		return;
	}
	float* row = logits + (u64)r * (u64)V;

	// The target's logit, read before any thread overwrites the row (thread 0
	// reads it before its first barrier; the row is written only after
	// several).
	int tgood = 0;
	float tlogit = 0.0f;
	if (tid == 0 && targets != 0) {
		float tf = targets[r];
		if (tf >= 0.0f && tf < (float)V && tf == __builtin_truncf(tf)) {
			tgood = 1;
			tlogit = row[(int)tf];
		}
	}

	// 1. Max and its first index. Like the host loop (maxv, arg = row[0], 0,
	// replaced only by a strictly larger value), element 0 seeds thread 0
	// whatever it is, and other NaNs never win.
	float maxv = -INF_;
	int arg = INT_MAX_;
	for (unsigned i = tid; i < (unsigned)V; i += n) {
		float v = row[i];
		if (i == 0 || v > maxv || (v == maxv && (int)i < arg)) {
			maxv = v;
			arg = (int)i;
		}
	}
	block_argmax(&maxv, &arg, tid, n);

	// 2. Sampling. Thread t owns the contiguous chunk [lo, hi) of the row;
	// a block scan of the chunk sums gives its starting cumulative sum. The
	// token is the first index whose cumulative sum exceeds u: the thread
	// whose chunk crosses u finds it by a serial scan from its start; a later
	// thread whose start already exceeds u offers its first index (this
	// covers a crossing lost to rounding between the scan and the serial
	// sum); the smallest offer wins, and V - 1 when there is none.
	int tok = arg;
	if (temperature > 0.0f) {
		const float invT = 1.0f / temperature;
		const unsigned chunk = ((unsigned)V + n - 1) / n;
		unsigned lo = tid * chunk, hi = lo + chunk;
		if (lo > (unsigned)V) {
			lo = (unsigned)V;
		}
		if (hi > (unsigned)V) {
			hi = (unsigned)V;
		}
		float cs = 0.0f;
		for (unsigned i = lo; i < hi; i++) {
			cs += exp_f((row[i] - maxv) * invT);
		}
		float excl, incl, total;
		block_scan(cs, tid, n, &excl, &incl, &total);
		const float u = (float)uniform01(seed, pos + (u64)r) * total;
		int offer = INT_MAX_;
		if (lo < hi) {
			if (u < excl) {
				offer = (int)lo;
			} else if (u < incl) {
				float cum = excl;
				for (unsigned i = lo; i < hi; i++) {
					cum += exp_f((row[i] - maxv) * invT);
					if (u < cum) {
						offer = (int)i;
						break;
					}
				}
			}
		}
		tok = block_min(offer, tid, n);
		if (tok == INT_MAX_) {
			tok = V - 1;
		}
	}

	// 3. Softmax at temperature 1 in place. All reads of the logits above
	// precede the barriers of the last reduction; each thread then rewrites
	// only the elements it reads (stride n).
	float sum = 0.0f;
	for (unsigned i = tid; i < (unsigned)V; i += n) {
		float e = exp_f(row[i] - maxv);
		row[i] = e;
		sum += e;
	}
	sum = block_sum(sum, tid, n);
	const float inv = 1.0f / sum;
	for (unsigned i = tid; i < (unsigned)V; i += n) {
		row[i] *= inv;
	}

	if (tid == 0) {
		float loss = 0.0f;
		if (targets != 0) {
			loss = tgood ? log_f(sum) + (maxv - tlogit) : __builtin_bit_cast(float, 0x7fc00000);
		}
		out[2 * (u64)r] = (float)tok;
		out[2 * (u64)r + 1] = loss;
	}
}
