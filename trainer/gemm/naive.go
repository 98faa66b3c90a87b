package gemm

// Naive is the triple loop: the reference every other backend is tested
// against, and the "before BLAS" state of design note 002.
type Naive struct{}

func init() { Register("naive", func() Backend { return Naive{} }) }

// Name implements Backend.
func (Naive) Name() string { return "naive" }

// Sgemm implements Backend with one float32 accumulator per output element,
// summed over k in increasing order.
func (Naive) Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var sum float32
			for p := 0; p < k; p++ {
				var av, bv float32
				if transA {
					av = a[p*lda+i]
				} else {
					av = a[i*lda+p]
				}
				if transB {
					bv = b[j*ldb+p]
				} else {
					bv = b[p*ldb+j]
				}
				sum += av * bv
			}
			if beta == 0 {
				c[i*ldc+j] = alpha * sum
			} else {
				c[i*ldc+j] = alpha*sum + beta*c[i*ldc+j]
			}
		}
	}
}
