package nn

// ResidualForward writes out = a + b over n elements.
func ResidualForward(out, a, b []float32, n int) {
	out = out[:n]
	a = a[:n]
	b = b[:n]
	for i := range out {
		out[i] = a[i] + b[i]
	}
}

// ResidualBackward accumulates dout into both da and db.
func ResidualBackward(da, db, dout []float32, n int) {
	da = da[:n]
	db = db[:n]
	dout = dout[:n]
	for i, d := range dout {
		da[i] += d
		db[i] += d
	}
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
