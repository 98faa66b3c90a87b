//go:build ignore

// (The constraint above keeps the go command from treating this file as a
// cgo source of package fakecuda, which embeds it and compiles it with gcc.)

// fakecuda: a host-only test double of the CUDA driver API (libcuda.so.1)
// and of cuBLAS, for the run-time binding in trainer/device/cudadrv and the
// cuda device built on it. One shared object serves as both libraries
// (MEMPROBE_LIBCUDA and MEMPROBE_LIBCUBLAS point at it). Build and use it
// through package memprobe/internal/fakecuda; see its doc comment for what
// the double checks and what it cannot.
//
// Every entry point has the real C signature (CUresult is int, CUdeviceptr
// unsigned long long, handles are pointers, sizes size_t), so the Go side
// calls it exactly as it calls the driver. The behaviour that matters:
//
//   - Streams defer: an enqueued copy, memset, kernel or GEMM does nothing
//     until cuStreamSynchronize, cuStreamDestroy_v2, cuMemFree_v2 or
//     cuMemFreeHost runs it. Reading a device-to-host result before the
//     sync, or reusing a staging buffer a queued copy still has to read,
//     gives wrong values.
//   - The current context is thread-local, and every memory, stream,
//     module, launch and cuBLAS call needs one (CUDA_ERROR_INVALID_CONTEXT).
//   - Device memory is not host memory: a CUdeviceptr is an address in a
//     range no host allocation uses (dereferencing it on the host faults),
//     and a fresh allocation holds 0xff bytes (float NaN), not zeros.
//     Addresses are never reused (a stale pointer is refused) unless
//     FAKECUDA_REUSE_ADDRESSES is set: then cuMemAlloc_v2 hands out the
//     most recently freed address (of the last 64 freed) whose charged size
//     is the one asked for, as the driver's allocator does, so that a stale
//     pointer names a live allocation.
//   - Memory is charged as the driver would: the primary context, each
//     module, allocations packed into 2 MiB pages (their total rounded up
//     to 2 MiB, as an H100 charged), each cuBLAS handle's
//     workspace (from its first Sgemm, until cublasDestroy_v2) and cuBLAS's
//     kernels (from the first Sgemm in a context's lifetime, until the
//     context is destroyed: CUDA >= 12.2 loads modules lazily, and cuBLAS's
//     stay loaded after its handles are gone). The driver's reservation
//     (FAKECUDA_RESERVED_BYTES) is outside what CUDA reports:
//     cuDeviceTotalMem_v2 and cuMemGetInfo_v2's total are the physical
//     memory less the reservation, and free is the physical memory less
//     the reservation and what the process holds, so CUDA's free is
//     NVML's free while CUDA's total is below NVML's.
//   - Copies from or to host memory that cuMemHostAlloc did not return are
//     counted (fakecuda_pageable_copies): the real driver makes them
//     synchronous.
//   - cuLaunchKernel reads the kernel's parameters at launch, as the driver
//     copies them; the kernel runs later.
//   - Events are stream work too: cuEventRecord enqueues a record that
//     takes the time (CLOCK_MONOTONIC) when the stream runs it, so until
//     the sync cuEventElapsedTime says CUDA_ERROR_NOT_READY, and an event
//     never recorded (or created with CU_EVENT_DISABLE_TIMING) gives
//     CUDA_ERROR_INVALID_HANDLE, as the driver's do. Since a stream's work
//     runs in one burst at the sync, the time between two events is the
//     host time the fake spent running the work between them: real loops
//     (memset, copies, the GEMM, softmax), so positive when there is work
//     between them, and not a GPU's time. Re-recording an event makes it
//     pending again until the new record runs; destroying one whose
//     record is still queued detaches the record, which then does nothing.
//     A record queued behind a launch that fails never runs (the event
//     stays not ready), as the work before it never completed. Like
//     device addresses, a destroyed event's handle is never handed out
//     again (a stale handle is refused) unless FAKECUDA_REUSE_ADDRESSES
//     is set: then cuEventCreate returns the most recently destroyed one.
//
// State is global and guarded by one mutex. Environment, read at each use:
// FAKECUDA_INIT_ERROR (cuInit's result), FAKECUDA_DEVICES (default 1),
// FAKECUDA_TOTAL_BYTES (default 80 GiB per device: the physical memory),
// FAKECUDA_RESERVED_BYTES (default 0: the driver's reservation),
// FAKECUDA_FAIL_LAUNCH (the n-th accepted cuLaunchKernel of the process
// fails when it runs), FAKECUDA_LEAK_PER_LAUNCH_BYTES (device memory each
// accepted cuLaunchKernel takes and keeps until the context is destroyed), FAKECUDA_REUSE_ADDRESSES (1: cuMemAlloc_v2 reuses
// freed addresses, cuEventCreate destroyed events), FAKECUDA_FAIL_BLAS_CREATE (1: cublasCreate_v2 returns
// CUBLAS_STATUS_NOT_INITIALIZED).
// Compile with -DFAKECUDA_OMIT_DTOH to leave cuMemcpyDtoHAsync_v2 out, and
// with -DFAKECUDA_OMIT_EVENTS to leave out the four event entry points
// (cuEventCreate, cuEventRecord, cuEventElapsedTime, cuEventDestroy_v2),
// which the binding resolves optionally.

#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef int cublasStatus_t;
typedef struct fake_ctx *CUcontext;
typedef struct fake_stream *CUstream;
typedef struct fake_module *CUmodule;
typedef struct fake_function *CUfunction;
typedef struct fake_handle *cublasHandle_t;
typedef struct fake_event *CUevent;

enum {
	CUDA_SUCCESS = 0,
	CUDA_ERROR_INVALID_VALUE = 1,
	CUDA_ERROR_OUT_OF_MEMORY = 2,
	CUDA_ERROR_NOT_INITIALIZED = 3,
	CUDA_ERROR_NO_DEVICE = 100,
	CUDA_ERROR_INVALID_DEVICE = 101,
	CUDA_ERROR_INVALID_CONTEXT = 201,
	CUDA_ERROR_INVALID_PTX = 218,
	CUDA_ERROR_INVALID_HANDLE = 400,
	CUDA_ERROR_NOT_FOUND = 500,
	CUDA_ERROR_NOT_READY = 600,
	CUDA_ERROR_LAUNCH_FAILED = 719,
};

enum {
	CUBLAS_STATUS_SUCCESS = 0,
	CUBLAS_STATUS_NOT_INITIALIZED = 1,
	CUBLAS_STATUS_ALLOC_FAILED = 3,
	CUBLAS_STATUS_INVALID_VALUE = 7,
	CUBLAS_STATUS_EXECUTION_FAILED = 13,
};

#define MIB (1ULL << 20)
#define GIB (1ULL << 30)
#define MAX_DEVICES 16
#define CONTEXT_BYTES (500 * MIB)    /* a primary context's own use */
#define MODULE_BYTES (2 * MIB)       /* a loaded module */
#define WORKSPACE_BYTES (32 * MIB)   /* a cuBLAS handle's lazy workspace */
#define BLAS_KERNEL_BYTES (12 * MIB) /* cuBLAS's kernels, loaded lazily into a context */
#define GRANULE (2 * MIB)            /* cuMemAlloc's granularity */
#define SOFTMAX_BLOCK 1024           /* kernels.SoftmaxSampleBlock */
#define DRIVER_VERSION 13000
#define CUBLAS_VERSION 130100
#define DEVICE_NAME "Fake GPU (memprobe test double)"
/* Device addresses start here: canonical, but far from the host's heap,
 * its mmap area and the Go and race runtimes' reservations. */
#define VA_BASE 0x00000a0000000000ULL

/* ---- error texts ---- */

struct code_text {
	int code;
	const char *name, *desc;
};

static const struct code_text cu_errors[] = {
	{0, "CUDA_SUCCESS", "no error"},
	{1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
	{2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
	{3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
	{4, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
	{34, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
	{46, "CUDA_ERROR_DEVICE_UNAVAILABLE", "CUDA-capable device(s) is/are busy or unavailable"},
	{100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
	{101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
	{200, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
	{201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
	{209, "CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"},
	{218, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
	{222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "the provided PTX was compiled with an unsupported toolchain."},
	{400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
	{500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
	{600, "CUDA_ERROR_NOT_READY", "device not ready"},
	{700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
	{701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
	{702, "CUDA_ERROR_LAUNCH_TIMEOUT", "the launch timed out and was terminated"},
	{709, "CUDA_ERROR_CONTEXT_IS_DESTROYED", "context is destroyed"},
	{719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
	{999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static const struct code_text cublas_statuses[] = {
	{0, "CUBLAS_STATUS_SUCCESS", "success"},
	{1, "CUBLAS_STATUS_NOT_INITIALIZED", "library not initialized"},
	{3, "CUBLAS_STATUS_ALLOC_FAILED", "resource allocation failed"},
	{7, "CUBLAS_STATUS_INVALID_VALUE", "an invalid numeric value was used as an argument"},
	{8, "CUBLAS_STATUS_ARCH_MISMATCH", "an absent device architectural feature is required"},
	{11, "CUBLAS_STATUS_MAPPING_ERROR", "an access to GPU memory space failed"},
	{13, "CUBLAS_STATUS_EXECUTION_FAILED", "the GPU program failed to execute"},
	{14, "CUBLAS_STATUS_INTERNAL_ERROR", "an internal operation failed"},
	{15, "CUBLAS_STATUS_NOT_SUPPORTED", "the functionality requested is not supported"},
	{16, "CUBLAS_STATUS_LICENSE_ERROR", "the functionality requested requires some license"},
};

static const struct code_text *find_code(const struct code_text *t, size_t n, int code) {
	for (size_t i = 0; i < n; i++) {
		if (t[i].code == code) {
			return &t[i];
		}
	}
	return NULL;
}

/* ---- state ---- */

struct fake_ctx {
	int dev;
	int refs; /* primary context retains; active while > 0 */
};

struct alloc {
	CUdeviceptr dptr;
	size_t size;
	unsigned char *host; /* the backing store */
	int dev;
	unsigned long long hidden; /* FAKECUDA_HIDDEN_BYTES when it was made */
};

struct pinned {
	uintptr_t p;
	size_t size;
};

enum op_kind { OP_HTOD, OP_DTOH, OP_MEMSET32, OP_SOFTMAX, OP_SGEMM, OP_EVENT };

/* cuEventCreate's flags (cuda.h). */
enum {
	CU_EVENT_DEFAULT = 0x0,
	CU_EVENT_BLOCKING_SYNC = 0x1,
	CU_EVENT_DISABLE_TIMING = 0x2,
	CU_EVENT_INTERPROCESS = 0x4,
};

struct fake_event {
	struct fake_event *next;
	int dev;
	unsigned flags;
	int recorded;           /* cuEventRecord accepted at least once */
	int completed;          /* the latest record has run */
	unsigned long long seq; /* records accepted: only the latest one completes the event */
	long long at_ns;        /* CLOCK_MONOTONIC when the latest record ran */
};

struct op {
	struct op *next;
	enum op_kind kind;
	int fail; /* FAKECUDA_FAIL_LAUNCH chose this launch */
	union {
		struct {
			void *dst;
			const void *src;
			size_t n;
		} copy;
		struct {
			uint32_t *dst;
			uint32_t v;
			size_t n;
		} memset;
		struct {
			float *out, *logits;
			const float *targets;
			int rows, V;
			float temperature;
			unsigned long long seed, pos;
		} softmax;
		struct {
			int ta, tb, m, n, k, lda, ldb, ldc;
			float alpha, beta;
			const float *A, *B;
			float *C;
		} gemm;
		struct {
			struct fake_event *e;   /* NULL: destroyed while queued */
			unsigned long long seq; /* the e->seq this record was */
		} event;
	} u;
};

struct fake_stream {
	struct fake_stream *next;
	int dev;
	unsigned flags;
	struct op *head, *tail;
	CUresult err; /* sticky: set when a failing launch runs */
};

struct fake_function {
	struct fake_module *mod;
};

struct fake_module {
	struct fake_module *next;
	int dev;
	struct fake_function fn;
};

struct fake_handle {
	struct fake_handle *next;
	int dev;
	struct fake_stream *stream; /* NULL: none set, work runs at once */
	int stream_gone;            /* the stream set was destroyed since */
	int has_workspace;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int initialized;
static struct fake_ctx ctxs[MAX_DEVICES];
static __thread struct fake_ctx *current; /* cuCtxSetCurrent: per thread */

static struct alloc *allocs;
static size_t nallocs, capallocs;
static CUdeviceptr next_va = VA_BASE;

/* freed remembers the last FREED_KEEP device ranges cuMemFree_v2 gave back,
 * newest last, for FAKECUDA_REUSE_ADDRESSES; without it they are never
 * handed out again. */
#define FREED_KEEP 64
struct freed_range {
	CUdeviceptr dptr;
	unsigned long long charged;
	int dev;
};
static struct freed_range freed[FREED_KEEP];
static int nfreed;

static struct pinned *pins;
static size_t npins, cappins;

static struct fake_stream default_streams[MAX_DEVICES]; /* stream 0 */
static struct fake_stream *streams;                      /* cuStreamCreate's */
static struct fake_module *modules;
static struct fake_handle *handles;
static struct fake_event *events;

/* alloc_bytes[dev] is what the live allocations asked for, alloc_hidden[dev]
 * the FAKECUDA_HIDDEN_BYTES they took beside it (used_alloc). */
static unsigned long long alloc_bytes[MAX_DEVICES], alloc_hidden[MAX_DEVICES];
static unsigned long long used_modules[MAX_DEVICES], used_workspace[MAX_DEVICES];
/* blas_kernels[dev]: the first Sgemm in the primary context's lifetime
 * loaded cuBLAS's kernels into it (lazy loading, CUDA >= 12.2); they stay,
 * whatever handles come and go, until the context is destroyed. */
static int blas_kernels[MAX_DEVICES];
/* leaked[dev]: what FAKECUDA_LEAK_PER_LAUNCH_BYTES took at each accepted
 * cuLaunchKernel, charged to the process until the context is destroyed. */
static unsigned long long leaked[MAX_DEVICES];

static int pageable_copies;
static int launches; /* accepted cuLaunchKernel calls, for FAKECUDA_FAIL_LAUNCH */

#define LOCK() pthread_mutex_lock(&mu)
#define UNLOCK() pthread_mutex_unlock(&mu)

static int env_int(const char *name, int def) {
	const char *s = getenv(name);
	if (s == NULL || *s == 0) {
		return def;
	}
	return atoi(s);
}

static int ndevices(void) {
	int n = env_int("FAKECUDA_DEVICES", 1);
	if (n < 0) {
		n = 0;
	}
	if (n > MAX_DEVICES) {
		n = MAX_DEVICES;
	}
	return n;
}

static unsigned long long total_bytes(void) {
	const char *s = getenv("FAKECUDA_TOTAL_BYTES");
	if (s == NULL || *s == 0) {
		return 80 * GIB;
	}
	return strtoull(s, NULL, 0);
}

static unsigned long long round_up(unsigned long long n, unsigned long long to) {
	return (n + to - 1) / to * to;
}

/* used_alloc is what dev's live allocations are charged: packed into
 * GRANULE pages, their total rounded up to GRANULE (an H100 with driver 580
 * charged 148 MiB for five buffers of 147.4 MiB in all, 174 MiB for five of
 * 172.2 MiB: not each rounded up, which would have been 156 and 180 MiB),
 * and the hidden bytes each took (FAKECUDA_HIDDEN_BYTES). */
static unsigned long long used_alloc(int dev) { return round_up(alloc_bytes[dev], GRANULE) + alloc_hidden[dev]; }

/* hidden_bytes is FAKECUDA_HIDDEN_BYTES (default 0): device memory each
 * cuMemAlloc_v2 takes beside what it was asked for, outside the pages, and
 * charges to the process (CUDA's free, NVML's per-process figure) until
 * the allocation is freed: memory no ledger of the caller's knows. */
static unsigned long long hidden_bytes(void) {
	const char *s = getenv("FAKECUDA_HIDDEN_BYTES");
	return s != NULL && *s != 0 ? strtoull(s, NULL, 0) : 0;
}

/* leak_per_launch is FAKECUDA_LEAK_PER_LAUNCH_BYTES (default 0): device
 * memory each accepted cuLaunchKernel takes and never gives back while the
 * context lives, as a driver or library allocating while a program runs
 * would: made after every set-up allocation, in no ledger, and not in a
 * cuBLAS call. */
static unsigned long long leak_per_launch(void) {
	const char *s = getenv("FAKECUDA_LEAK_PER_LAUNCH_BYTES");
	return s != NULL && *s != 0 ? strtoull(s, NULL, 0) : 0;
}

/* process_bytes is this process's device memory: what NVML would list. */
static unsigned long long process_bytes(int dev) {
	return (ctxs[dev].refs > 0 ? CONTEXT_BYTES : 0) + used_alloc(dev) + used_modules[dev] + used_workspace[dev] +
	       (blas_kernels[dev] ? BLAS_KERNEL_BYTES : 0) + leaked[dev];
}

/* reserved_bytes is FAKECUDA_RESERVED_BYTES (default 0): the driver's own
 * reservation, which a real GPU shows as used before any process (NVML)
 * and which CUDA leaves out of its total (cuda_total_bytes). */
static unsigned long long reserved_bytes(void) {
	const char *s = getenv("FAKECUDA_RESERVED_BYTES");
	return s != NULL && *s != 0 ? strtoull(s, NULL, 0) : 0;
}

/* uncharged_bytes is FAKECUDA_UNCHARGED_BYTES (default 0) while dev's
 * context exists: memory the driver takes for the context that NVML
 * charges to no process. */
static unsigned long long uncharged_bytes(int dev) {
	const char *s = getenv("FAKECUDA_UNCHARGED_BYTES");
	return ctxs[dev].refs > 0 && s != NULL && *s != 0 ? strtoull(s, NULL, 0) : 0;
}

/* used_bytes is the physical memory in use: the reservation and this
 * process's memory, charged to it or not. */
static unsigned long long used_bytes(int dev) { return process_bytes(dev) + uncharged_bytes(dev) + reserved_bytes(); }

/* cuda_total_bytes is the total CUDA reports (cuDeviceTotalMem_v2,
 * cuMemGetInfo_v2): the physical memory less the driver's reservation.
 * CUDA's free is total_bytes() - used_bytes(), the same as NVML's, so the
 * two totals differ by the reservation while the free figures agree. */
static unsigned long long cuda_total_bytes(void) {
	unsigned long long t = total_bytes(), r = reserved_bytes();
	return r < t ? t - r : 0;
}

/* reuse_freed returns the most recently freed address of charged bytes on
 * dev, taking it off the list, or 0: what the driver's allocator does with
 * a freed block of the size asked for. Only under FAKECUDA_REUSE_ADDRESSES. */
static CUdeviceptr reuse_freed(int dev, unsigned long long charged) {
	if (env_int("FAKECUDA_REUSE_ADDRESSES", 0) == 0) {
		return 0;
	}
	for (int i = nfreed - 1; i >= 0; i--) {
		if (freed[i].dev == dev && freed[i].charged == charged) {
			CUdeviceptr p = freed[i].dptr;
			memmove(&freed[i], &freed[i + 1], (size_t)(nfreed - 1 - i) * sizeof freed[0]);
			nfreed--;
			return p;
		}
	}
	return 0;
}

static void remember_freed(CUdeviceptr dptr, unsigned long long charged, int dev) {
	if (nfreed == FREED_KEEP) {
		memmove(&freed[0], &freed[1], (FREED_KEEP - 1) * sizeof freed[0]);
		nfreed--;
	}
	freed[nfreed++] = (struct freed_range){dptr, charged, dev};
}

static int fits(int dev, unsigned long long bytes) {
	unsigned long long total = total_bytes(), used = used_bytes(dev);
	return used <= total && bytes <= total - used;
}

/* need_ctx is the check at the top of every call that needs a context. */
static CUresult need_ctx(void) {
	if (!initialized) {
		return CUDA_ERROR_NOT_INITIALIZED;
	}
	if (current == NULL || current->refs <= 0) {
		return CUDA_ERROR_INVALID_CONTEXT;
	}
	return CUDA_SUCCESS;
}

/* find_range returns the allocation holding [p, p+n), n >= 1, or NULL. */
static struct alloc *find_range(CUdeviceptr p, unsigned long long n) {
	if (n == 0) {
		n = 1;
	}
	for (size_t i = 0; i < nallocs; i++) {
		struct alloc *a = &allocs[i];
		if (p >= a->dptr && p - a->dptr < a->size && n <= a->size - (p - a->dptr)) {
			return a;
		}
	}
	return NULL;
}

static void *host_of(CUdeviceptr p, unsigned long long n) {
	struct alloc *a = find_range(p, n);
	return a ? a->host + (p - a->dptr) : NULL;
}

static int is_pinned(const void *p, size_t n) {
	uintptr_t q = (uintptr_t)p;
	for (size_t i = 0; i < npins; i++) {
		if (q >= pins[i].p && q - pins[i].p < pins[i].size && n <= pins[i].size - (q - pins[i].p)) {
			return 1;
		}
	}
	return 0;
}

/* ---- streams ---- */

static struct fake_stream *live_stream(CUstream s) {
	for (struct fake_stream *t = streams; t; t = t->next) {
		if (t == s) {
			return t;
		}
	}
	return NULL;
}

/* get_stream resolves a handle for an enqueue in the current context:
 * NULL is the device's default stream. */
static CUresult get_stream(CUstream h, struct fake_stream **out) {
	struct fake_stream *s = h == NULL ? &default_streams[current->dev] : live_stream(h);
	if (s == NULL || s->dev != current->dev) {
		return CUDA_ERROR_INVALID_HANDLE;
	}
	if (s->err != CUDA_SUCCESS) {
		return s->err;
	}
	*out = s;
	return CUDA_SUCCESS;
}

static void enqueue(struct fake_stream *s, struct op *o) {
	o->next = NULL;
	if (s->tail) {
		s->tail->next = o;
	} else {
		s->head = o;
	}
	s->tail = o;
}

static double uniform01(unsigned long long seed, unsigned long long pos) {
	unsigned long long z = seed + (pos + 1ULL) * 0x9E3779B97F4A7C15ULL;
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	z ^= z >> 31;
	return (double)(z >> 11) / 9007199254740992.0;
}

/* run_softmax is softmaxSampleRows of trainer/device/device.go, with the
 * CUDA kernel's answer (NaN loss) for a target that is not a token id. */
static void run_softmax(float *out, float *logits, const float *targets, int rows, int V, float temperature,
			unsigned long long seed, unsigned long long pos) {
	if (V <= 0) {
		return;
	}
	for (int r = 0; r < rows; r++) {
		float *row = logits + (size_t)r * (size_t)V;
		int tgood = 0;
		float tlogit = 0.0f;
		if (targets != NULL) {
			float tf = targets[r];
			if (tf >= 0.0f && tf < (float)V && tf == truncf(tf)) {
				tgood = 1;
				tlogit = row[(int)tf];
			}
		}
		float maxv = row[0];
		int arg = 0;
		for (int i = 0; i < V; i++) {
			if (row[i] > maxv) {
				maxv = row[i];
				arg = i;
			}
		}
		int tok = arg;
		if (temperature > 0.0f) {
			float invT = 1.0f / temperature;
			float sum = 0.0f;
			for (int i = 0; i < V; i++) {
				sum += expf((row[i] - maxv) * invT);
			}
			float u = (float)uniform01(seed, pos + (unsigned long long)r) * sum;
			float cum = 0.0f;
			tok = V - 1;
			for (int i = 0; i < V; i++) {
				cum += expf((row[i] - maxv) * invT);
				if (u < cum) {
					tok = i;
					break;
				}
			}
		}
		float sum = 0.0f;
		for (int i = 0; i < V; i++) {
			float e = expf(row[i] - maxv);
			row[i] = e;
			sum += e;
		}
		float inv = 1.0f / sum;
		for (int i = 0; i < V; i++) {
			row[i] *= inv;
		}
		float loss = 0.0f;
		if (targets != NULL) {
			loss = tgood ? logf(sum) + (maxv - tlogit) : NAN;
		}
		out[2 * (size_t)r] = (float)tok;
		out[2 * (size_t)r + 1] = loss;
	}
}

/* run_sgemm: C = alpha·op(A)·op(B) + beta·C, column-major; C is not read
 * when beta is 0 (BLAS semantics). */
static void run_sgemm(int ta, int tb, int m, int n, int k, float alpha, const float *A, int lda, const float *B, int ldb,
		      float beta, float *C, int ldc) {
	for (int j = 0; j < n; j++) {
		for (int i = 0; i < m; i++) {
			float acc = 0.0f;
			for (int l = 0; l < k; l++) {
				float a = ta ? A[l + (size_t)i * lda] : A[i + (size_t)l * lda];
				float b = tb ? B[j + (size_t)l * ldb] : B[l + (size_t)j * ldb];
				acc += a * b;
			}
			float *c = &C[i + (size_t)j * ldc];
			*c = beta == 0.0f ? alpha * acc : alpha * acc + beta * *c;
		}
	}
}

static void run_op(struct fake_stream *s, struct op *o) {
	if (s->err != CUDA_SUCCESS) {
		return; /* the stream failed: later work does not run */
	}
	if (o->fail) {
		s->err = CUDA_ERROR_LAUNCH_FAILED;
		return;
	}
	switch (o->kind) {
	case OP_HTOD:
	case OP_DTOH:
		memcpy(o->u.copy.dst, o->u.copy.src, o->u.copy.n);
		break;
	case OP_MEMSET32:
		for (size_t i = 0; i < o->u.memset.n; i++) {
			o->u.memset.dst[i] = o->u.memset.v;
		}
		break;
	case OP_SOFTMAX:
		run_softmax(o->u.softmax.out, o->u.softmax.logits, o->u.softmax.targets, o->u.softmax.rows, o->u.softmax.V,
			    o->u.softmax.temperature, o->u.softmax.seed, o->u.softmax.pos);
		break;
	case OP_SGEMM:
		run_sgemm(o->u.gemm.ta, o->u.gemm.tb, o->u.gemm.m, o->u.gemm.n, o->u.gemm.k, o->u.gemm.alpha, o->u.gemm.A,
			  o->u.gemm.lda, o->u.gemm.B, o->u.gemm.ldb, o->u.gemm.beta, o->u.gemm.C, o->u.gemm.ldc);
		break;
	case OP_EVENT: {
		struct fake_event *e = o->u.event.e;
		/* An earlier record superseded by a later cuEventRecord (on
		 * another stream, still queued) does not complete the event. */
		if (e != NULL && o->u.event.seq == e->seq) {
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			e->at_ns = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
			e->completed = 1;
		}
		break;
	}
	}
}

static void drain(struct fake_stream *s) {
	while (s->head) {
		struct op *o = s->head;
		s->head = o->next;
		if (s->head == NULL) {
			s->tail = NULL;
		}
		run_op(s, o);
		free(o);
	}
}

static void drain_all(void) {
	for (int i = 0; i < MAX_DEVICES; i++) {
		drain(&default_streams[i]);
	}
	for (struct fake_stream *s = streams; s; s = s->next) {
		drain(s);
	}
}

static struct op *new_op(enum op_kind kind) {
	struct op *o = calloc(1, sizeof *o);
	if (o) {
		o->kind = kind;
	}
	return o;
}

__attribute__((constructor)) static void fakecuda_init(void) {
	for (int i = 0; i < MAX_DEVICES; i++) {
		ctxs[i].dev = i;
		default_streams[i].dev = i;
	}
}

/* ---- driver API: init, errors, devices ---- */

EXPORT CUresult cuGetErrorName(CUresult error, const char **pStr) {
	if (pStr == NULL) {
		return CUDA_ERROR_INVALID_VALUE;
	}
	const struct code_text *c = find_code(cu_errors, sizeof cu_errors / sizeof cu_errors[0], error);
	*pStr = c ? c->name : NULL;
	return c ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuGetErrorString(CUresult error, const char **pStr) {
	if (pStr == NULL) {
		return CUDA_ERROR_INVALID_VALUE;
	}
	const struct code_text *c = find_code(cu_errors, sizeof cu_errors / sizeof cu_errors[0], error);
	*pStr = c ? c->desc : NULL;
	return c ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuInit(unsigned int flags) {
	if (flags != 0) {
		return CUDA_ERROR_INVALID_VALUE;
	}
	LOCK();
	CUresult r = env_int("FAKECUDA_INIT_ERROR", 0);
	if (r == CUDA_SUCCESS && ndevices() == 0) {
		r = CUDA_ERROR_NO_DEVICE;
	}
	if (r == CUDA_SUCCESS) {
		initialized = 1;
	}
	UNLOCK();
	return r;
}

EXPORT CUresult cuDriverGetVersion(int *version) {
	if (version == NULL) {
		return CUDA_ERROR_INVALID_VALUE;
	}
	*version = DRIVER_VERSION;
	return CUDA_SUCCESS;
}

static CUresult need_init(void) { return initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED; }

static int valid_device(CUdevice dev) { return dev >= 0 && dev < ndevices(); }

EXPORT CUresult cuDeviceGetCount(int *count) {
	LOCK();
	CUresult r = need_init();
	if (r == CUDA_SUCCESS) {
		if (count == NULL) {
			r = CUDA_ERROR_INVALID_VALUE;
		} else {
			*count = ndevices();
		}
	}
	UNLOCK();
	return r;
}

EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal) {
	LOCK();
	CUresult r = need_init();
	if (r == CUDA_SUCCESS) {
		if (device == NULL) {
			r = CUDA_ERROR_INVALID_VALUE;
		} else if (!valid_device(ordinal)) {
			r = CUDA_ERROR_INVALID_DEVICE;
		} else {
			*device = ordinal;
		}
	}
	UNLOCK();
	return r;
}

EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
	LOCK();
	CUresult r = need_init();
	if (r == CUDA_SUCCESS) {
		if (name == NULL || len <= 0) {
			r = CUDA_ERROR_INVALID_VALUE;
		} else if (!valid_device(dev)) {
			r = CUDA_ERROR_INVALID_DEVICE;
		} else {
			strncpy(name, DEVICE_NAME, (size_t)len - 1);
			name[len - 1] = 0;
		}
	}
	UNLOCK();
	return r;
}

EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
	LOCK();
	CUresult r = need_init();
	if (r == CUDA_SUCCESS) {
		if (bytes == NULL) {
			r = CUDA_ERROR_INVALID_VALUE;
		} else if (!valid_device(dev)) {
			r = CUDA_ERROR_INVALID_DEVICE;
		} else {
			*bytes = cuda_total_bytes();
		}
	}
	UNLOCK();
	return r;
}

/* ---- contexts ---- */

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
	LOCK();
	CUresult r = need_init();
	if (r == CUDA_SUCCESS) {
		if (pctx == NULL) {
			r = CUDA_ERROR_INVALID_VALUE;
		} else if (!valid_device(dev)) {
			r = CUDA_ERROR_INVALID_DEVICE;
		} else if (ctxs[dev].refs == 0 && !fits(dev, CONTEXT_BYTES)) {
			r = CUDA_ERROR_OUT_OF_MEMORY;
		} else {
			ctxs[dev].refs++;
			*pctx = &ctxs[dev];
		}
	}
	UNLOCK();
	return r;
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
	LOCK();
	CUresult r = need_init();
	if (r == CUDA_SUCCESS) {
		if (!valid_device(dev)) {
			r = CUDA_ERROR_INVALID_DEVICE;
		} else if (ctxs[dev].refs <= 0) {
			r = CUDA_ERROR_INVALID_CONTEXT;
		} else if (--ctxs[dev].refs == 0) {
			blas_kernels[dev] = 0; /* the context is destroyed, and what was loaded into it */
			leaked[dev] = 0;
		}
	}
	UNLOCK();
	return r;
}

EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
	LOCK();
	CUresult r = need_init();
	if (r == CUDA_SUCCESS) {
		if (ctx == NULL) {
			current = NULL;
		} else if (ctx >= &ctxs[0] && ctx < &ctxs[MAX_DEVICES] && valid_device(ctx->dev)) {
			current = ctx; /* an inactive (released) context fails at use */
		} else {
			r = CUDA_ERROR_INVALID_CONTEXT;
		}
	}
	UNLOCK();
	return r;
}

/* ---- memory ---- */

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytes) {
	LOCK();
	CUresult r = need_ctx();
	if (r == CUDA_SUCCESS) {
		int dev = current->dev;
		unsigned long long charged = round_up(bytes, GRANULE), hidden = hidden_bytes();
		/* what the process's charge grows by: the pages its total now
		 * needs beyond those it had, and the hidden bytes */
		unsigned long long more = round_up(alloc_bytes[dev] + bytes, GRANULE) - round_up(alloc_bytes[dev], GRANULE) + hidden;
		if (dptr == NULL || bytes == 0) {
			r = CUDA_ERROR_INVALID_VALUE;
		} else if (!fits(dev, more)) {
			r = CUDA_ERROR_OUT_OF_MEMORY;
		} else {
			unsigned char *host = aligned_alloc(256, round_up(bytes, 256));
			if (nallocs == capallocs) {
				size_t c = capallocs ? 2 * capallocs : 64;
				struct alloc *a = realloc(allocs, c * sizeof *a);
				if (a) {
					allocs = a;
					capallocs = c;
				}
			}
			if (host == NULL || nallocs == capallocs) {
				free(host);
				r = CUDA_ERROR_OUT_OF_MEMORY;
			} else {
				memset(host, 0xff, round_up(bytes, 256)); /* not zeroed: NaN */
				CUdeviceptr p = reuse_freed(dev, charged);
				if (p == 0) {
					p = next_va;
					next_va += charged + GRANULE; /* a guard gap */
				}
				allocs[nallocs++] = (struct alloc){p, bytes, host, dev, hidden};
				*dptr = p;
				alloc_bytes[dev] += bytes;
				alloc_hidden[dev] += hidden;
			}
		}
	}
	UNLOCK();
	return r;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) {
	LOCK();
	CUresult r = need_ctx();
	if (r == CUDA_SUCCESS) {
		size_t i = 0;
		while (i < nallocs && allocs[i].dptr != dptr) {
			i++;
		}
		if (i == nallocs) {
			r = CUDA_ERROR_INVALID_VALUE;
		} else {
			drain_all(); /* cuMemFree synchronises */
			remember_freed(allocs[i].dptr, round_up(allocs[i].size, GRANULE), allocs[i].dev);
			alloc_bytes[allocs[i].dev] -= allocs[i].size;
			alloc_hidden[allocs[i].dev] -= allocs[i].hidden;
			free(allocs[i].host);
			allocs[i] = allocs[--nallocs];
		}
	}
	UNLOCK();
	return r;
}

EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
	LOCK();
	CUresult r = need_ctx();
	if (r == CUDA_SUCCESS) {
		if (free_bytes == NULL || total == NULL) {
			r = CUDA_ERROR_INVALID_VALUE;
		} else {
			unsigned long long t = total_bytes(), u = used_bytes(current->dev);
			*total = cuda_total_bytes();
			*free_bytes = u < t ? t - u : 0;
		}
	}
	UNLOCK();
	return r;
}

EXPORT CUresult cuMemHostAlloc(void **pp, size_t bytes, unsigned int flags) {
	LOCK();
	CUresult r = need_ctx();
	if (r == CUDA_SUCCESS) {
		void *p = NULL;
		if (pp == NULL || bytes == 0 || (flags & ~0xfu) != 0) {
			r = CUDA_ERROR_INVALID_VALUE;
		} else {
			if (npins == cappins) {
				size_t c = cappins ? 2 * cappins : 64;
				struct pinned *q = realloc(pins, c * sizeof *q);
				if (q) {
					pins = q;
					cappins = c;
				}
			}
			if (npins == cappins || posix_memalign(&p, 4096, bytes) != 0) {
				r = CUDA_ERROR_OUT_OF_MEMORY;
			} else {
				memset(p, 0, bytes);
				pins[npins++] = (struct pinned){(uintptr_t)p, bytes};
				*pp = p;
			}
		}
	}
	UNLOCK();
	return r;
}

EXPORT CUresult cuMemFreeHost(void *p) {
	LOCK();
	CUresult r = need_ctx();
	if (r == CUDA_SUCCESS) {
		size_t i = 0;
		while (i < npins && pins[i].p != (uintptr_t)p) {
			i++;
		}
		if (p == NULL || i == npins) {
			r = CUDA_ERROR_INVALID_VALUE;
		} else {
			drain_all(); /* as cudaFreeHost, it waits for the device */
			free(p);
			pins[i] = pins[--npins];
		}
	}
	UNLOCK();
	return r;
}

EXPORT CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int ui, size_t n, CUstream h) {
	LOCK();
	struct fake_stream *s = NULL;
	CUresult r = need_ctx();
	if (r == CUDA_SUCCESS) {
		r = get_stream(h, &s);
	}
	if (r == CUDA_SUCCESS && n > 0) {
		void *d = NULL;
		struct op *o = NULL;
		if (dst % 4 != 0 || n > SIZE_MAX / 4 || (d = host_of(dst, (unsigned long long)n * 4)) == NULL) {
			r = CUDA_ERROR_INVALID_VALUE;
		} else if ((o = new_op(OP_MEMSET32)) == NULL) {
			r = CUDA_ERROR_OUT_OF_MEMORY;
		} else {
			o->u.memset.dst = d;
			o->u.memset.v = ui;
			o->u.memset.n = n;
			enqueue(s, o);
		}
	}
	UNLOCK();
	return r;
}

/* copy_async enqueues a copy between host and device: dev is the device
 * range, host the host side; to_device gives the direction. */
static CUresult copy_async(int to_device, CUdeviceptr dev, void *host, size_t n, CUstream h) {
	LOCK();
	struct fake_stream *s = NULL;
	CUresult r = need_ctx();
	if (r == CUDA_SUCCESS) {
		r = get_stream(h, &s);
	}
	if (r == CUDA_SUCCESS && n > 0) {
		void *d = NULL;
		struct op *o = NULL;
		if (host == NULL || (d = host_of(dev, n)) == NULL) {
			r = CUDA_ERROR_INVALID_VALUE;
		} else if ((o = new_op(to_device ? OP_HTOD : OP_DTOH)) == NULL) {
			r = CUDA_ERROR_OUT_OF_MEMORY;
		} else {
			if (!is_pinned(host, n)) {
				pageable_copies++; /* the real driver would block here */
			}
			o->u.copy.dst = to_device ? d : host;
			o->u.copy.src = to_device ? (const void *)host : d;
			o->u.copy.n = n;
			enqueue(s, o);
		}
	}
	UNLOCK();
	return r;
}

EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream h) {
	return copy_async(1, dst, (void *)src, n, h);
}

#ifndef FAKECUDA_OMIT_DTOH
EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream h) {
	return copy_async(0, src, dst, n, h);
}
#endif

/* ---- streams ---- */

EXPORT CUresult cuStreamCreate(CUstream *ph, unsigned int flags) {
	LOCK();
	CUresult r = need_ctx();
	if (r == CUDA_SUCCESS) {
		struct fake_stream *s = NULL;
		if (ph == NULL || (flags & ~1u) != 0) {
			r = CUDA_ERROR_INVALID_VALUE;
		} else if ((s = calloc(1, sizeof *s)) == NULL) {
			r = CUDA_ERROR_OUT_OF_MEMORY;
		} else {
			s->dev = current->dev;
			s->flags = flags;
			s->next = streams;
			streams = s;
			*ph = s;
		}
	}
	UNLOCK();
	return r;
}

EXPORT CUresult cuStreamDestroy_v2(CUstream h) {
	LOCK();
	CUresult r = need_ctx();
	if (r == CUDA_SUCCESS) {
		struct fake_stream **pp = &streams;
		while (*pp && *pp != h) {
			pp = &(*pp)->next;
		}
		if (h == NULL || *pp == NULL) {
			r = CUDA_ERROR_INVALID_HANDLE;
		} else {
			struct fake_stream *s = *pp;
			drain(s); /* queued work completes first */
			*pp = s->next;
			for (struct fake_handle *b = handles; b; b = b->next) {
				if (b->stream == s) {
					b->stream = NULL; /* dangling in cuBLAS: refused at use */
					b->stream_gone = 1;
				}
			}
			free(s);
		}
	}
	UNLOCK();
	return r;
}

EXPORT CUresult cuStreamSynchronize(CUstream h) {
	LOCK();
	CUresult r = need_ctx();
	if (r == CUDA_SUCCESS) {
		struct fake_stream *s = h == NULL ? &default_streams[current->dev] : live_stream(h);
		if (s == NULL) {
			r = CUDA_ERROR_INVALID_HANDLE;
		} else {
			drain(s);
			r = s->err;
		}
	}
	UNLOCK();
	return r;
}

/* ---- events ---- */

#ifndef FAKECUDA_OMIT_EVENTS
/* dead_events are the destroyed events, newest first: kept, so that a
 * destroyed handle is never a new event's unless FAKECUDA_REUSE_ADDRESSES
 * asks cuEventCreate to take the newest back, as a driver may. */
static struct fake_event *dead_events;

static struct fake_event *live_event(CUevent h) {
	for (struct fake_event *e = events; e; e = e->next) {
		if (e == h) {
			return e;
		}
	}
	return NULL;
}

/* detach_event makes every queued record of e do nothing when it runs:
 * the driver lets cuEventDestroy_v2 return before the record completes,
 * and the record must not complete an event that reuses the handle. */
static void detach_event(struct fake_event *e) {
	for (int i = 0; i < MAX_DEVICES; i++) {
		for (struct op *o = default_streams[i].head; o; o = o->next) {
			if (o->kind == OP_EVENT && o->u.event.e == e) {
				o->u.event.e = NULL;
			}
		}
	}
	for (struct fake_stream *s = streams; s; s = s->next) {
		for (struct op *o = s->head; o; o = o->next) {
			if (o->kind == OP_EVENT && o->u.event.e == e) {
				o->u.event.e = NULL;
			}
		}
	}
}

EXPORT CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags) {
	LOCK();
	CUresult r = need_ctx();
	if (r == CUDA_SUCCESS) {
		struct fake_event *e = NULL;
		unsigned known = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
		/* An interprocess event must be created without timing (cuda.h). */
		if (phEvent == NULL || (Flags & ~known) != 0 ||
		    ((Flags & CU_EVENT_INTERPROCESS) != 0 && (Flags & CU_EVENT_DISABLE_TIMING) == 0)) {
			r = CUDA_ERROR_INVALID_VALUE;
		} else if (env_int("FAKECUDA_REUSE_ADDRESSES", 0) != 0 && dead_events != NULL) {
			e = dead_events;
			dead_events = e->next;
		} else if ((e = malloc(sizeof *e)) == NULL) {
			r = CUDA_ERROR_OUT_OF_MEMORY;
		}
		if (e != NULL) {
			memset(e, 0, sizeof *e);
			e->dev = current->dev;
			e->flags = Flags;
			e->next = events;
			events = e;
			*phEvent = e;
		}
	}
	UNLOCK();
	return r;
}

EXPORT CUresult cuEventRecord(CUevent hEvent, CUstream hStream) {
	LOCK();
	struct fake_stream *s = NULL;
	struct fake_event *e = NULL;
	CUresult r = need_ctx();
	if (r == CUDA_SUCCESS && ((e = live_event(hEvent)) == NULL || e->dev != current->dev)) {
		r = CUDA_ERROR_INVALID_HANDLE;
	}
	if (r == CUDA_SUCCESS) {
		r = get_stream(hStream, &s);
	}
	if (r == CUDA_SUCCESS) {
		struct op *o = new_op(OP_EVENT);
		if (o == NULL) {
			r = CUDA_ERROR_OUT_OF_MEMORY;
		} else {
			/* The event now stands for this record: pending until the
			 * stream runs it, whatever an earlier record did. */
			e->recorded = 1;
			e->completed = 0;
			e->seq++;
			o->u.event.e = e;
			o->u.event.seq = e->seq;
			enqueue(s, o);
		}
	}
	UNLOCK();
	return r;
}

EXPORT CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd) {
	LOCK();
	CUresult r = need_ctx();
	if (r == CUDA_SUCCESS) {
		struct fake_event *a = live_event(hStart), *b = live_event(hEnd);
		if (pMilliseconds == NULL) {
			r = CUDA_ERROR_INVALID_VALUE;
		} else if (a == NULL || b == NULL || !a->recorded || !b->recorded ||
			   ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING) != 0) {
			r = CUDA_ERROR_INVALID_HANDLE; /* the driver's answer for a never-recorded event too */
		} else if (!a->completed || !b->completed) {
			r = CUDA_ERROR_NOT_READY;
		} else {
			*pMilliseconds = (float)((double)(b->at_ns - a->at_ns) / 1e6);
		}
	}
	UNLOCK();
	return r;
}

EXPORT CUresult cuEventDestroy_v2(CUevent hEvent) {
	LOCK();
	CUresult r = need_ctx();
	if (r == CUDA_SUCCESS) {
		struct fake_event **pp = &events;
		while (*pp && *pp != hEvent) {
			pp = &(*pp)->next;
		}
		if (hEvent == NULL || *pp == NULL) {
			r = CUDA_ERROR_INVALID_HANDLE;
		} else {
			struct fake_event *e = *pp;
			*pp = e->next;
			detach_event(e); /* its handle may be a new event's (FAKECUDA_REUSE_ADDRESSES) */
			e->next = dead_events;
			dead_events = e;
		}
	}
	UNLOCK();
	return r;
}
#endif

/* ---- modules and launches ---- */

static struct fake_module *live_module(CUmodule m) {
	for (struct fake_module *t = modules; t; t = t->next) {
		if (t == m) {
			return t;
		}
	}
	return NULL;
}

EXPORT CUresult cuModuleLoadData(CUmodule *pm, const void *image) {
	LOCK();
	CUresult r = need_ctx();
	if (r == CUDA_SUCCESS) {
		struct fake_module *m = NULL;
		int dev = current->dev;
		if (pm == NULL || image == NULL) {
			r = CUDA_ERROR_INVALID_VALUE;
		} else if (strstr((const char *)image, ".entry softmax_sample") == NULL) {
			r = CUDA_ERROR_INVALID_PTX;
		} else if (!fits(dev, MODULE_BYTES)) {
			r = CUDA_ERROR_OUT_OF_MEMORY;
		} else if ((m = calloc(1, sizeof *m)) == NULL) {
			r = CUDA_ERROR_OUT_OF_MEMORY;
		} else {
			m->dev = dev;
			m->fn.mod = m;
			m->next = modules;
			modules = m;
			used_modules[dev] += MODULE_BYTES;
			*pm = m;
		}
	}
	UNLOCK();
	return r;
}

EXPORT CUresult cuModuleUnload(CUmodule h) {
	LOCK();
	CUresult r = need_ctx();
	if (r == CUDA_SUCCESS) {
		struct fake_module **pp = &modules;
		while (*pp && *pp != h) {
			pp = &(*pp)->next;
		}
		if (h == NULL || *pp == NULL) {
			r = CUDA_ERROR_INVALID_HANDLE;
		} else {
			struct fake_module *m = *pp;
			*pp = m->next;
			used_modules[m->dev] -= MODULE_BYTES;
			free(m);
		}
	}
	UNLOCK();
	return r;
}

EXPORT CUresult cuModuleGetFunction(CUfunction *pf, CUmodule h, const char *name) {
	LOCK();
	CUresult r = need_ctx();
	if (r == CUDA_SUCCESS) {
		struct fake_module *m = live_module(h);
		if (m == NULL) {
			r = CUDA_ERROR_INVALID_HANDLE;
		} else if (pf == NULL || name == NULL) {
			r = CUDA_ERROR_INVALID_VALUE;
		} else if (strcmp(name, "softmax_sample") != 0) {
			r = CUDA_ERROR_NOT_FOUND;
		} else {
			*pf = &m->fn;
		}
	}
	UNLOCK();
	return r;
}

EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
			       unsigned int by, unsigned int bz, unsigned int shared, CUstream h, void **kernelParams,
			       void **extra) {
	LOCK();
	struct fake_stream *s = NULL;
	CUresult r = need_ctx();
	if (r == CUDA_SUCCESS) {
		struct fake_module *m = NULL;
		for (m = modules; m && &m->fn != f; m = m->next) {
		}
		if (m == NULL || m->dev != current->dev) {
			r = CUDA_ERROR_INVALID_HANDLE;
		}
	}
	if (r == CUDA_SUCCESS) {
		r = get_stream(h, &s);
	}
	if (r == CUDA_SUCCESS && (kernelParams == NULL || extra != NULL || shared > 48 * 1024)) {
		r = CUDA_ERROR_INVALID_VALUE;
	}
	if (r == CUDA_SUCCESS && leak_per_launch() > 0 && !fits(current->dev, leak_per_launch())) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (r == CUDA_SUCCESS) {
		/* The driver copies the parameters now: so does the fake. */
		CUdeviceptr out = *(const CUdeviceptr *)kernelParams[0];
		CUdeviceptr logits = *(const CUdeviceptr *)kernelParams[1];
		CUdeviceptr targets = *(const CUdeviceptr *)kernelParams[2];
		int rows = *(const int *)kernelParams[3];
		int V = *(const int *)kernelParams[4];
		float temperature = *(const float *)kernelParams[5];
		unsigned long long seed = *(const unsigned long long *)kernelParams[6];
		unsigned long long pos = *(const unsigned long long *)kernelParams[7];
		void *hout = NULL, *hlogits = NULL, *htargets = NULL;
		if (rows <= 0 || gx != (unsigned)rows || gy != 1 || gz != 1 || bx != SOFTMAX_BLOCK || by != 1 || bz != 1) {
			r = CUDA_ERROR_INVALID_VALUE;
		} else if ((hout = host_of(out, 2ULL * 4 * (unsigned)rows)) == NULL) {
			r = CUDA_ERROR_INVALID_VALUE;
		} else if (V > 0 && (hlogits = host_of(logits, 4ULL * (unsigned)rows * (unsigned)V)) == NULL) {
			r = CUDA_ERROR_INVALID_VALUE;
		} else if (targets != 0 && (htargets = host_of(targets, 4ULL * (unsigned)rows)) == NULL) {
			r = CUDA_ERROR_INVALID_VALUE;
		} else {
			struct op *o = new_op(OP_SOFTMAX);
			if (o == NULL) {
				r = CUDA_ERROR_OUT_OF_MEMORY;
			} else {
				launches++;
				leaked[current->dev] += leak_per_launch();
				int fail_at = env_int("FAKECUDA_FAIL_LAUNCH", 0);
				o->fail = fail_at > 0 && launches == fail_at;
				o->u.softmax.out = hout;
				o->u.softmax.logits = hlogits;
				o->u.softmax.targets = htargets;
				o->u.softmax.rows = rows;
				o->u.softmax.V = V;
				o->u.softmax.temperature = temperature;
				o->u.softmax.seed = seed;
				o->u.softmax.pos = pos;
				enqueue(s, o);
			}
		}
	}
	UNLOCK();
	return r;
}

/* ---- cuBLAS ---- */

static struct fake_handle *live_handle(cublasHandle_t h) {
	for (struct fake_handle *t = handles; t; t = t->next) {
		if (t == h) {
			return t;
		}
	}
	return NULL;
}

EXPORT const char *cublasGetStatusName(cublasStatus_t status) {
	const struct code_text *c = find_code(cublas_statuses, sizeof cublas_statuses / sizeof cublas_statuses[0], status);
	return c ? c->name : "<unknown>";
}

EXPORT const char *cublasGetStatusString(cublasStatus_t status) {
	const struct code_text *c = find_code(cublas_statuses, sizeof cublas_statuses / sizeof cublas_statuses[0], status);
	return c ? c->desc : "<unknown>";
}

EXPORT cublasStatus_t cublasCreate_v2(cublasHandle_t *ph) {
	if (ph == NULL) {
		return CUBLAS_STATUS_INVALID_VALUE;
	}
	LOCK();
	cublasStatus_t r = CUBLAS_STATUS_SUCCESS;
	struct fake_handle *b = NULL;
	if (need_ctx() != CUDA_SUCCESS || env_int("FAKECUDA_FAIL_BLAS_CREATE", 0) != 0) {
		r = CUBLAS_STATUS_NOT_INITIALIZED;
	} else if ((b = calloc(1, sizeof *b)) == NULL) {
		r = CUBLAS_STATUS_ALLOC_FAILED;
	} else {
		b->dev = current->dev;
		b->next = handles;
		handles = b;
		*ph = b;
	}
	UNLOCK();
	return r;
}

EXPORT cublasStatus_t cublasDestroy_v2(cublasHandle_t h) {
	LOCK();
	cublasStatus_t r = CUBLAS_STATUS_SUCCESS;
	struct fake_handle **pp = &handles;
	while (*pp && *pp != h) {
		pp = &(*pp)->next;
	}
	if (h == NULL || *pp == NULL || need_ctx() != CUDA_SUCCESS) {
		r = CUBLAS_STATUS_NOT_INITIALIZED;
	} else {
		struct fake_handle *b = *pp;
		*pp = b->next;
		if (b->has_workspace) {
			used_workspace[b->dev] -= WORKSPACE_BYTES;
		}
		free(b);
	}
	UNLOCK();
	return r;
}

EXPORT cublasStatus_t cublasSetStream_v2(cublasHandle_t h, CUstream stream) {
	LOCK();
	cublasStatus_t r = CUBLAS_STATUS_SUCCESS;
	struct fake_handle *b = live_handle(h);
	if (b == NULL || need_ctx() != CUDA_SUCCESS) {
		r = CUBLAS_STATUS_NOT_INITIALIZED;
	} else if (stream == NULL) {
		b->stream = NULL;
		b->stream_gone = 0;
	} else {
		struct fake_stream *s = live_stream(stream);
		if (s == NULL || s->dev != b->dev) {
			r = CUBLAS_STATUS_INVALID_VALUE;
		} else {
			b->stream = s;
			b->stream_gone = 0;
		}
	}
	UNLOCK();
	return r;
}

EXPORT cublasStatus_t cublasGetVersion_v2(cublasHandle_t h, int *version) {
	LOCK();
	cublasStatus_t r = CUBLAS_STATUS_SUCCESS;
	if (live_handle(h) == NULL) {
		r = CUBLAS_STATUS_NOT_INITIALIZED;
	} else if (version == NULL) {
		r = CUBLAS_STATUS_INVALID_VALUE;
	} else {
		*version = CUBLAS_VERSION;
	}
	UNLOCK();
	return r;
}

static int imax(int a, int b) { return a > b ? a : b; }

/* operand returns the host address of a cols×ld column-major operand whose
 * rows × cols part is used, or NULL when it does not lie in one allocation. */
static const float *operand(const float *p, int rows, int cols, int ld) {
	unsigned long long elems = (unsigned long long)ld * (unsigned long long)(cols - 1) + (unsigned long long)rows;
	return host_of((CUdeviceptr)(uintptr_t)p, elems * 4);
}

EXPORT cublasStatus_t cublasSgemm_v2(cublasHandle_t h, int transa, int transb, int m, int n, int k, const float *alpha,
				     const float *A, int lda, const float *B, int ldb, const float *beta, float *C,
				     int ldc) {
	LOCK();
	cublasStatus_t r = CUBLAS_STATUS_SUCCESS;
	struct fake_handle *b = live_handle(h);
	const float *hA = NULL, *hB = NULL;
	float *hC = NULL;
	if (b == NULL) {
		r = CUBLAS_STATUS_NOT_INITIALIZED;
	} else if (need_ctx() != CUDA_SUCCESS || current->dev != b->dev) {
		r = CUBLAS_STATUS_EXECUTION_FAILED; /* no context to launch in */
	} else if (transa < 0 || transa > 2 || transb < 0 || transb > 2 || m < 0 || n < 0 || k < 0 ||
		   lda < imax(1, transa == 0 ? m : k) || ldb < imax(1, transb == 0 ? k : n) || ldc < imax(1, m) ||
		   alpha == NULL || beta == NULL) {
		r = CUBLAS_STATUS_INVALID_VALUE;
	} else if (m > 0 && n > 0) {
		int ta = transa != 0, tb = transb != 0;
		if (k > 0) {
			hA = ta ? operand(A, k, m, lda) : operand(A, m, k, lda);
			hB = tb ? operand(B, n, k, ldb) : operand(B, k, n, ldb);
		}
		hC = (float *)operand(C, m, n, ldc);
		if (hC == NULL || (k > 0 && (hA == NULL || hB == NULL))) {
			r = CUBLAS_STATUS_INVALID_VALUE;
		} else if (!fits(b->dev, (blas_kernels[b->dev] ? 0 : BLAS_KERNEL_BYTES) +
						 (b->has_workspace ? 0 : WORKSPACE_BYTES))) {
			r = CUBLAS_STATUS_ALLOC_FAILED;
		} else if (b->stream_gone || (b->stream != NULL && b->stream->err != CUDA_SUCCESS)) {
			r = CUBLAS_STATUS_EXECUTION_FAILED;
		} else {
			blas_kernels[b->dev] = 1; /* the first GEMM in the context loads them */
			if (!b->has_workspace) {
				b->has_workspace = 1;
				used_workspace[b->dev] += WORKSPACE_BYTES;
			}
			struct op *o = new_op(OP_SGEMM);
			if (o == NULL) {
				r = CUBLAS_STATUS_ALLOC_FAILED;
			} else {
				/* alpha and beta: host pointers, read now */
				o->u.gemm.ta = ta;
				o->u.gemm.tb = tb;
				o->u.gemm.m = m;
				o->u.gemm.n = n;
				o->u.gemm.k = k;
				o->u.gemm.alpha = *alpha;
				o->u.gemm.beta = *beta;
				o->u.gemm.A = hA;
				o->u.gemm.lda = lda;
				o->u.gemm.B = hB;
				o->u.gemm.ldb = ldb;
				o->u.gemm.C = hC;
				o->u.gemm.ldc = ldc;
				if (b->stream != NULL) {
					enqueue(b->stream, o);
				} else {
					struct fake_stream now = {0};
					run_op(&now, o);
					free(o);
				}
			}
		}
	}
	UNLOCK();
	return r;
}

/* ---- queries for tests (not CUDA API) ---- */

EXPORT int fakecuda_pageable_copies(void) {
	LOCK();
	int n = pageable_copies;
	UNLOCK();
	return n;
}

EXPORT int fakecuda_live_allocs(void) {
	LOCK();
	int n = (int)nallocs;
	UNLOCK();
	return n;
}

EXPORT int fakecuda_live_pinned(void) {
	LOCK();
	int n = (int)npins;
	UNLOCK();
	return n;
}

EXPORT int fakecuda_live_streams(void) {
	LOCK();
	int n = 0;
	for (struct fake_stream *s = streams; s; s = s->next) {
		n++;
	}
	UNLOCK();
	return n;
}

EXPORT int fakecuda_live_handles(void) {
	LOCK();
	int n = 0;
	for (struct fake_handle *b = handles; b; b = b->next) {
		n++;
	}
	UNLOCK();
	return n;
}

EXPORT int fakecuda_live_events(void) {
	LOCK();
	int n = 0;
	for (struct fake_event *e = events; e; e = e->next) {
		n++;
	}
	UNLOCK();
	return n;
}

EXPORT int fakecuda_live_modules(void) {
	LOCK();
	int n = 0;
	for (struct fake_module *m = modules; m; m = m->next) {
		n++;
	}
	UNLOCK();
	return n;
}

/* fakecuda_process_bytes is the device memory of this process on GPU dev
 * (context, modules, allocations at 2 MiB granularity, cuBLAS workspaces
 * and cuBLAS's lazily loaded kernels; not the driver's reservation),
 * for a stand-in NVML to list (internal/fakenvml/fakenvml.c,
 * FAKENVML_FAKECUDA). */
/* fakecuda_uncharged_bytes is the device memory dev's context takes that
 * NVML charges to no process (FAKECUDA_UNCHARGED_BYTES), for a stand-in
 * NVML to count as used. */
EXPORT unsigned long long fakecuda_uncharged_bytes(int dev) {
	if (dev < 0 || dev >= MAX_DEVICES) {
		return 0;
	}
	LOCK();
	unsigned long long n = uncharged_bytes(dev);
	UNLOCK();
	return n;
}

EXPORT unsigned long long fakecuda_process_bytes(int dev) {
	if (dev < 0 || dev >= MAX_DEVICES) {
		return 0;
	}
	LOCK();
	unsigned long long n = process_bytes(dev);
	UNLOCK();
	return n;
}

EXPORT int fakecuda_ctx_refs(int dev) {
	if (dev < 0 || dev >= MAX_DEVICES) {
		return -1;
	}
	LOCK();
	int n = ctxs[dev].refs;
	UNLOCK();
	return n;
}

/* fakecuda_leaked_bytes is what FAKECUDA_LEAK_PER_LAUNCH_BYTES has taken on
 * GPU dev since its context was made. */
EXPORT unsigned long long fakecuda_leaked_bytes(int dev) {
	if (dev < 0 || dev >= MAX_DEVICES) {
		return 0;
	}
	LOCK();
	unsigned long long n = leaked[dev];
	UNLOCK();
	return n;
}

EXPORT int fakecuda_launches(void) {
	LOCK();
	int n = launches;
	UNLOCK();
	return n;
}

EXPORT void fakecuda_reset_counters(void) {
	LOCK();
	pageable_copies = 0;
	UNLOCK();
}
