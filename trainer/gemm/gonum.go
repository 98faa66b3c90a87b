package gemm

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// Gonum is the pure-Go backend: gonum.org/v1/gonum/blas/gonum, which is
// row-major like the trainer, so arguments pass through unchanged.
//
// Parallelism: for large products gonum's Sgemm starts its own goroutines.
// It cuts C into 64×64 blocks and, when there are at least 4 of them, runs
// up to GOMAXPROCS goroutines, each computing whole blocks of C along the
// full k dimension; smaller products run serially on the calling goroutine.
// Because each block of C is summed by one goroutine in a fixed k order, the
// result does not depend on scheduling, so the backend stays deterministic.
//
// These are goroutines, not OS threads: the Go scheduler runs them on the
// same GOMAXPROCS processors as the trainer's executors, so nesting them
// under parallel executors never oversubscribes the CPU with threads. It does
// not add parallelism either: once the executors occupy every processor,
// gonum's goroutines only queue behind them, and each parallel call still
// pays for its goroutines, channel and wait group (allocations per call; see
// BenchmarkSgemm). Parallelising at one level therefore means choosing: run
// many executors with GOMAXPROCS cores shared, or one executor and let gonum
// spread a product. The trainer chooses the executors. gonum has no switch to
// force the serial path.
type Gonum struct{}

func init() { Register("gonum", func() Backend { return Gonum{} }) }

// Name implements Backend.
func (Gonum) Name() string { return "gonum" }

// Sgemm implements Backend with gonum's Sgemm.
func (Gonum) Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if prologue("gonum", transA, transB, m, n, k, a, lda, b, ldb, beta, c, ldc) {
		return
	}
	gonum.Implementation{}.Sgemm(gonumTrans(transA), gonumTrans(transB), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

func gonumTrans(t bool) blas.Transpose {
	if t {
		return blas.Trans
	}
	return blas.NoTrans
}
