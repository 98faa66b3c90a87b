//go:build openblas

package gemm

/*
#cgo LDFLAGS: -lopenblas
#include <cblas.h>

// blas_thread_shutdown_ stops the pthread build's worker pool (OpenBLAS
// itself calls it before fork, and starts the pool again when a call
// needs it). An OpenMP build has no such pool or symbol: weak, so this
// links against either and is a no-op there.
extern int blas_thread_shutdown_(void) __attribute__((weak));

static int memprobe_openblas_stop_pool(void) {
	if (blas_thread_shutdown_ == 0) {
		return -1;
	}
	return blas_thread_shutdown_();
}

// blas_server_avail is the pthread build's "the pool is running" flag
// (weak, as above: absent from an OpenMP build).
extern int blas_server_avail __attribute__((weak));

static int memprobe_openblas_pool_running(void) {
	return &blas_server_avail != 0 && blas_server_avail != 0;
}
*/
import "C"

import "unsafe"

// openblasBuilt reports whether this binary was built with -tags openblas.
const openblasBuilt = true

// OpenBLAS is the cgo backend: cblas_sgemm from the system OpenBLAS
// (libopenblas-dev), called with CblasRowMajor. It is built only with
// -tags openblas.
//
// Threads: init sets OpenBLAS to one thread. The trainer runs its own
// executors in parallel and parallelises at one level only; an OpenBLAS that
// also used a thread per core inside every call would put executors×cores
// busy threads on the cores, each spinning or waiting for the others, and the
// measured time would belong to that contention instead of the model. With one thread each call runs on the OS thread of
// the goroutine that makes it, the sum order is fixed, and the backend is
// deterministic.
//
// The pthread build starts a pool of cores−1 worker threads in the
// library's constructor, before main, and each spins about 2^28 cycles
// (0.1 s of CPU) waiting for work before it sleeps: 115 ms of the 2-core
// development machine's CPU in `probe exec -- sleep 1`, most of the
// probe's cost there, and 0.1 s a core on a large machine at the start of
// every command. With one thread the pool never gets work, so init stops
// it (blas_thread_shutdown_, which OpenBLAS restarts on demand should a
// call ever need it): no spin, and no idle threads in the process's thread
// total. OPENBLAS_CORETYPE is never set here: OpenBLAS picks the kernel
// for the CPU it runs on, and OpenBLASConfig reports which.
type OpenBLAS struct{}

func init() {
	C.openblas_set_num_threads(1)
	C.memprobe_openblas_stop_pool()
	Register("openblas", func() Backend { return OpenBLAS{} })
}

// Name implements Backend.
func (OpenBLAS) Name() string { return "openblas" }

// Sgemm implements Backend with cblas_sgemm. It allocates nothing: the
// slices' backing arrays are passed to C directly. prologue has checked the
// slices' lengths and finished the empty products, so every slice passed is
// non-empty and long enough for what OpenBLAS reads and writes.
func (OpenBLAS) Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if prologue("openblas", transA, transB, m, n, k, a, lda, b, ldb, beta, c, ldc) {
		return
	}
	C.cblas_sgemm(C.CblasRowMajor, cblasTrans(transA), cblasTrans(transB),
		C.blasint(m), C.blasint(n), C.blasint(k),
		C.float(alpha), (*C.float)(unsafe.Pointer(unsafe.SliceData(a))), C.blasint(lda),
		(*C.float)(unsafe.Pointer(unsafe.SliceData(b))), C.blasint(ldb),
		C.float(beta), (*C.float)(unsafe.Pointer(unsafe.SliceData(c))), C.blasint(ldc))
}

func cblasTrans(t bool) C.enum_CBLAS_TRANSPOSE {
	if t {
		return C.CblasTrans
	}
	return C.CblasNoTrans
}

// openblasPoolRunning reports whether OpenBLAS's pthread worker pool is
// running (false in an OpenMP build, which has none).
func openblasPoolRunning() bool { return C.memprobe_openblas_pool_running() != 0 }

// OpenBLASConfig returns openblas_get_config(): the OpenBLAS version, build
// options and the core type whose kernels this machine uses (for example
// "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY SkylakeX MAX_THREADS=64"), so the
// trainer can print it beside its timings. It is "" in a build without
// -tags openblas.
func OpenBLASConfig() string { return C.GoString(C.openblas_get_config()) }
