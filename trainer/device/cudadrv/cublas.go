package cudadrv

import (
	"unsafe"

	"memprobe/internal/dl"
)

// Op is a cublasOperation_t.
type Op uintptr

// The operations cuBLAS applies to a matrix operand.
const (
	OpN Op = 0 // CUBLAS_OP_N
	OpT Op = 1 // CUBLAS_OP_T
)

// cuBLAS status names (cublas_api.h), for libraries too old to have
// cublasGetStatusName.
var cublasStatusNames = map[Result]string{
	0: "CUBLAS_STATUS_SUCCESS", 1: "CUBLAS_STATUS_NOT_INITIALIZED", 3: "CUBLAS_STATUS_ALLOC_FAILED",
	7: "CUBLAS_STATUS_INVALID_VALUE", 8: "CUBLAS_STATUS_ARCH_MISMATCH", 11: "CUBLAS_STATUS_MAPPING_ERROR",
	13: "CUBLAS_STATUS_EXECUTION_FAILED", 14: "CUBLAS_STATUS_INTERNAL_ERROR", 15: "CUBLAS_STATUS_NOT_SUPPORTED",
	16: "CUBLAS_STATUS_LICENSE_ERROR",
}

// BLAS is one opened cuBLAS library.
type BLAS struct {
	Library string

	create, destroy, setStream, sgemm, getVersion uintptr
	statusName, statusString                      uintptr // optional (cuBLAS 11.4+)
}

// BLASHandle is a cublasHandle_t.
type BLASHandle uintptr

// OpenBLAS opens cuBLAS ($MEMPROBE_LIBCUBLAS, else libcublas.so.13, .12,
// .11 on the loader's path, then under $CUDA_HOME/lib64 and
// /usr/local/cuda/lib64) and resolves its entry points. It needs a loaded
// driver only to be used, not to be opened.
func OpenBLAS() (*BLAS, error) {
	lib, err := openLibrary(libraryNames(EnvLibCUBLAS, cuBLASLibraries, true))
	if err != nil {
		return nil, err
	}
	b := &BLAS{Library: lib.name}
	if err := lib.resolve(map[string]*uintptr{
		"cublasCreate_v2":     &b.create,
		"cublasDestroy_v2":    &b.destroy,
		"cublasSetStream_v2":  &b.setStream,
		"cublasSgemm_v2":      &b.sgemm,
		"cublasGetVersion_v2": &b.getVersion,
	}); err != nil {
		return nil, err
	}
	// Optional: the error text is better with them, the binding works
	// without.
	_ = lib.resolve(map[string]*uintptr{"cublasGetStatusName": &b.statusName})
	_ = lib.resolve(map[string]*uintptr{"cublasGetStatusString": &b.statusString})
	return b, nil
}

// Close is a no-op kept for symmetry: a library stays mapped for the
// process's life (the driver's own libraries do the same).
func (b *BLAS) Close() error { return nil }

func (b *BLAS) check(callName string, r Result) error {
	if r == Success {
		return nil
	}
	e := &Error{Call: callName, Code: r, Name: cublasStatusNames[r]}
	if b.statusName != 0 {
		r1 := callRaw(b.statusName, uintptr(uint32(r)))
		if s := dl.GoString(r1); s != "" {
			e.Name = s
		}
	}
	if b.statusString != 0 {
		r1 := callRaw(b.statusString, uintptr(uint32(r)))
		e.Desc = dl.GoString(r1)
	}
	return e
}

// Create makes a cuBLAS handle in the calling thread's current context.
func (b *BLAS) Create() (BLASHandle, error) {
	var h uintptr
	err := b.check("cublasCreate_v2", callOut(b.create, uintptr(unsafe.Pointer(&h))))
	return BLASHandle(h), err
}

// Destroy releases h and its workspace.
func (b *BLAS) Destroy(h BLASHandle) error {
	return b.check("cublasDestroy_v2", call(b.destroy, uintptr(h)))
}

// SetStream makes h enqueue its work on s.
func (b *BLAS) SetStream(h BLASHandle, s Stream) error {
	return b.check("cublasSetStream_v2", call(b.setStream, uintptr(h), uintptr(s)))
}

// Version is cuBLAS's version number (e.g. 130001).
func (b *BLAS) Version(h BLASHandle) (int, error) {
	var v int32
	err := b.check("cublasGetVersion_v2", callOut(b.getVersion, uintptr(h), uintptr(unsafe.Pointer(&v))))
	return int(v), err
}

// Sgemm enqueues C = alpha·op(A)·op(B) + beta·C, column-major, as
// cublasSgemm_v2. alpha and beta are host addresses of float32 values in
// C memory (the default host pointer mode).
func (b *BLAS) Sgemm(h BLASHandle, ta, tb Op, m, n, k int, alpha uintptr, A DevicePtr, lda int, B DevicePtr, ldb int, beta uintptr, C DevicePtr, ldc int) error {
	return b.check("cublasSgemm_v2", call(b.sgemm, uintptr(h), uintptr(ta), uintptr(tb),
		uintptr(m), uintptr(n), uintptr(k), alpha, uintptr(A), uintptr(lda), uintptr(B), uintptr(ldb),
		beta, uintptr(C), uintptr(ldc)))
}
