// Package gemm is the trainer's single-precision matrix-multiply seam.
//
// Every product in the model goes through a Backend so that the "before
// BLAS" state of the design notes (a triple loop) and the fast state are
// the same code path with a different backend. All matrices are row-major.
package gemm

import (
	"fmt"
	"sort"
	"strings"
)

// Backend computes C = alpha*op(A)*op(B) + beta*C for row-major float32
// matrices, where op(X) is X or its transpose. op(A) is m×k, op(B) is k×n and
// C is m×n; lda, ldb and ldc are the row strides of A, B and C as stored.
//
// A backend must be deterministic: the same inputs give the same bits, so the
// trainer's loss does not depend on which executor ran a sequence. A backend
// must not start threads of its own unless Threads() reports it: the trainer
// parallelises at one level only (see Threaded).
type Backend interface {
	Name() string
	Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int)
}

var registry = map[string]func() Backend{}

// Register makes a backend selectable by name. Backends register themselves
// in init; the fast ones only where their build tag or CPU allows.
func Register(name string, ctor func() Backend) { registry[name] = ctor }

// Names lists the backends compiled into this binary.
func Names() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// preference is the order in which Default picks a backend: the fastest
// available on this machine first. The measured facts behind it are in
// docs/benchmarks.md: OpenBLAS ~120-240 GFLOPS/core, gonum ~16, naive ~1;
// on the 2-core AMD EPYC (Zen 4) development machine, whose FMA peak is
// about 116 GFLOPS/core, the trainer's products run at about 105
// GFLOPS/core with avx512 or avx2 against 95 with openblas
// (BenchmarkSeedProducts, CPU time; "GEMM backends on the seed step's
// products" there). Zen 4 executes a 16-lane multiply-add as two 8-lane
// halves, so avx512's kernel can only tie or slightly beat avx2's there
// (a sequence's products at 101 against 100 GFLOPS per core, the whole
// step within the shared machine's noise); it is first because it is never
// slower there and because CPUs with full-width AVX-512 units (Intel Xeon,
// AMD Zen 5) double its multiply-add rate.
var preference = []string{"avx512", "avx2", "openblas", "gonum", "naive"}

// DefaultName is the backend Default returns.
func DefaultName() string {
	for _, n := range preference {
		if _, ok := registry[n]; ok {
			return n
		}
	}
	return "naive"
}

// Default returns the fastest backend compiled in.
func Default() Backend { b, _ := Get(DefaultName()); return b }

// Check reports whether name ("" and "auto" included) names a backend of
// this build, with the error Get would give.
func Check(name string) error {
	if name == "" || name == "auto" {
		return nil
	}
	if _, ok := registry[name]; !ok {
		return fmt.Errorf("gemm backend %q is not available in this build (have: %s)", name, strings.Join(Names(), ", "))
	}
	return nil
}

// Get returns the named backend, or an error listing what is available.
func Get(name string) (Backend, error) {
	if name == "" || name == "auto" {
		name = DefaultName()
	}
	ctor, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("gemm backend %q is not available in this build (have: %s)", name, strings.Join(Names(), ", "))
	}
	return ctor(), nil
}
