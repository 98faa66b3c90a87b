package nn

// ResidualForward writes out = a + b over n elements.
func ResidualForward(out, a, b []float32, n int) {
	vAdd3(out[:n], a[:n], b[:n])
}

// ResidualBackward accumulates dout into both da and db.
func ResidualBackward(da, db, dout []float32, n int) {
	dout = dout[:n]
	vAdd(da[:n], dout)
	vAdd(db[:n], dout)
}

// ResidualForwardNaive is the reference of ResidualForward.
func ResidualForwardNaive(out, a, b []float32, n int) {
	for i := 0; i < n; i++ {
		out[i] = a[i] + b[i]
	}
}

// ResidualBackwardNaive is the reference of ResidualBackward.
func ResidualBackwardNaive(da, db, dout []float32, n int) {
	for i := 0; i < n; i++ {
		da[i] += dout[i]
		db[i] += dout[i]
	}
}

// Accumulate adds src into dst over n elements, one float32 addition per
// element as a plain loop does (bit for bit): the trainer adds a sequence's
// own wte gradient into the shared one with it.
func Accumulate(dst, src []float32, n int) {
	vAdd(dst[:n], src[:n])
}

// AccumulateNaive is the reference of Accumulate.
func AccumulateNaive(dst, src []float32, n int) {
	for i := 0; i < n; i++ {
		dst[i] += src[i]
	}
}
