//go:build !openblas

package gemm

// openblasBuilt reports whether this binary was built with -tags openblas.
const openblasBuilt = false

// OpenBLASConfig returns "": this binary was built without -tags openblas,
// so no OpenBLAS is linked. See the openblas build for what it reports.
func OpenBLASConfig() string { return "" }
