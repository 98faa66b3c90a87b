package nn

import "math"

// Vector primitives of the fast kernels.
//
// Each primitive has a portable Go loop and, on amd64 with AVX2 and FMA, an
// assembly version (simd_amd64.s) that processes 8 floats per instruction.
// The assembly handles whole groups of 8; the Go wrappers here finish the
// tail. Elementwise transcendental primitives (GELU, exp) run their tail
// through the same assembly on a padded copy, so every element gets the same
// arithmetic wherever it sits in a row. Reductions sum 8 lanes in parallel
// and combine them in a fixed order, so their results do not depend on
// anything but the input: the trainer stays deterministic.
//
// The two paths differ in rounding only (the assembly fuses multiply-adds);
// both are tested against the naive kernels and against each other
// (simd_test.go).

// useSIMD selects the assembly primitives. It is simdAvailable unless a
// test switches it off to exercise the portable loops.
var useSIMD = simdAvailable

// geluConsts are the constants of the vector GELU, one per row, broadcast to
// the 8 lanes the assembly reads with a memory operand.
var geluConsts = func() (c [geluNumConsts][8]float32) {
	vals := [geluNumConsts]float32{
		geluScale,                        // s
		geluScale * 0.044715,             // s*0.044715
		geluScale * 3 * 0.044715,         // s*3*0.044715
		7.90531110763549805,              // tanh clamp
		-7.90531110763549805,             // -clamp
		0.0004,                           // below this |u|, tanh(u) = u
		0.5,                              // half
		1,                                // one
		-2.76076847742355e-16,            // a13
		2.00018790482477e-13,             // a11
		-8.60467152213735e-11,            // a9
		5.12229709037114e-08,             // a7
		1.48572235717979e-05,             // a5
		6.37261928875436e-04,             // a3
		4.89352455891786e-03,             // a1
		1.19825839466702e-06,             // b6
		1.18534705686654e-04,             // b4
		2.26843463243900e-03,             // b2
		4.89352518554385e-03,             // b0
		math.Float32frombits(0x7fffffff), // abs mask (as bits)
	}
	for i, v := range vals {
		for j := range c[i] {
			c[i][j] = v
		}
	}
	return c
}()

const geluNumConsts = 20

// expConsts are the constants of the vector exp (Cephes expf), broadcast
// like geluConsts.
var expConsts = func() (c [expNumConsts][8]float32) {
	vals := [expNumConsts]float32{
		expHi,                     // clamp above
		expLo,                     // clamp below; exp is 0 under it
		math.Log2E,                // log2(e)
		0.5,                       // half
		0.693359375,               // ln2 high part
		-2.12194440e-4,            // ln2 low part
		1.9875691500e-4,           // p0
		1.3981999507e-3,           // p1
		8.3334519073e-3,           // p2
		4.1665795894e-2,           // p3
		1.6666665459e-1,           // p4
		5.0000001201e-1,           // p5
		1,                         // one
		math.Float32frombits(127), // the exponent bias, as int32 bits
	}
	for i, v := range vals {
		for j := range c[i] {
			c[i][j] = v
		}
	}
	return c
}()

const (
	expNumConsts = 14
	expHi        = 88    // exp(88) = 1.65e38; 2^n stays finite for x <= expHi
	expLo        = -87.5 // exp(-87.5) = 1.0e-38, about the smallest normal float32
)

// expf32 is the portable twin of the vector exp: Cephes' expf (a degree-5
// polynomial on [-ln2/2, ln2/2] times 2^n), within 2 float32 ulps of exp
// for x in [-87.3, 88] (TestExp). It returns 0 for x < -87.5 (where exp(x)
// < 1.0e-38), -Inf and NaN included, and exp(88) for x > 88. The softmax
// kernels only pass x <= 0.
func expf32(x float32) float32 {
	if !(x >= expLo) {
		return 0
	}
	if x > expHi {
		x = expHi
	}
	fx := float32(math.Floor(float64(x*math.Log2E + 0.5)))
	x -= fx * 0.693359375
	x -= fx * -2.12194440e-4
	z := x * x
	y := float32(1.9875691500e-4)
	y = y*x + 1.3981999507e-3
	y = y*x + 8.3334519073e-3
	y = y*x + 4.1665795894e-2
	y = y*x + 1.6666665459e-1
	y = y*x + 5.0000001201e-1
	y = y*z + x + 1
	return y * math.Float32frombits(uint32(int32(fx)+127)<<23)
}

// vGeluForward writes out[i] = GELU(inp[i]) for i < len(inp).
func vGeluForward(out, inp []float32) {
	n := len(inp)
	out = out[:n]
	if !useSIMD {
		for i, x := range inp {
			u := geluScale * (x + 0.044715*x*x*x)
			out[i] = 0.5 * x * (1 + tanh32(u))
		}
		return
	}
	m := n &^ 7
	if m > 0 {
		geluFwdAVX2(&out[0], &inp[0], m, &geluConsts)
	}
	if m < n {
		var x, y [8]float32
		copy(x[:], inp[m:])
		geluFwdAVX2(&y[0], &x[0], 8, &geluConsts)
		copy(out[m:], y[:])
	}
}

// vGeluBackward computes g[i] = GELU'(inp[i])*dout[i] and adds it to
// dinp[i] (acc) or stores it there.
func vGeluBackward(dinp, inp, dout []float32, acc bool) {
	n := len(inp)
	dinp, dout = dinp[:n], dout[:n]
	if !useSIMD {
		for i, x := range inp {
			u := geluScale * (x + 0.044715*x*x*x)
			th := tanh32(u)
			sech2 := 1 - th*th
			grad := 0.5*(1+th) + 0.5*x*sech2*geluScale*(1+3*0.044715*x*x)
			if acc {
				dinp[i] += grad * dout[i]
			} else {
				dinp[i] = grad * dout[i]
			}
		}
		return
	}
	a := 0
	if acc {
		a = 1
	}
	m := n &^ 7
	if m > 0 {
		geluBwdAVX2(&dinp[0], &inp[0], &dout[0], m, &geluConsts, a)
	}
	if m < n {
		var x, d, g [8]float32
		copy(x[:], inp[m:])
		copy(d[:], dout[m:])
		copy(g[:], dinp[m:])
		geluBwdAVX2(&g[0], &x[0], &d[0], 8, &geluConsts, a)
		copy(dinp[m:], g[:])
	}
}

// vMax returns the largest of x (len(x) > 0).
func vMax(x []float32) float32 {
	n := len(x)
	m := n &^ 7
	var r float32
	i := 0
	if useSIMD && m > 0 {
		r = maxAVX2(&x[0], m)
		i = m
	} else {
		r = x[0]
	}
	for _, v := range x[i:] {
		if v > r {
			r = v
		}
	}
	return r
}

// vExpSub replaces x[i] by exp(x[i] - max) and returns their sum.
func vExpSub(x []float32, max float32) float32 {
	n := len(x)
	if !useSIMD {
		var sum float32
		for i, v := range x {
			e := expf32(v - max)
			x[i] = e
			sum += e
		}
		return sum
	}
	m := n &^ 7
	var sum float32
	if m > 0 {
		sum = expSubAVX2(&x[0], m, max, &expConsts)
	}
	if m < n {
		var t [8]float32
		for i := range t {
			t[i] = float32(math.Inf(-1))
		}
		copy(t[:], x[m:])
		sum += expSubAVX2(&t[0], 8, max, &expConsts)
		copy(x[m:], t[:])
	}
	return sum
}

// vScale multiplies x by s.
func vScale(x []float32, s float32) {
	n := len(x)
	i := 0
	if m := n &^ 7; useSIMD && m > 0 {
		scaleAVX2(&x[0], m, s)
		i = m
	}
	for ; i < n; i++ {
		x[i] *= s
	}
}

// vScaleInto writes dst = s*x.
func vScaleInto(dst, x []float32, s float32) {
	n := len(x)
	dst = dst[:n]
	i := 0
	if m := n &^ 7; useSIMD && m > 0 {
		scaleIntoAVX2(&dst[0], &x[0], m, s)
		i = m
	}
	for ; i < n; i++ {
		dst[i] = s * x[i]
	}
}

// vAxpy adds s*x to dst.
func vAxpy(dst, x []float32, s float32) {
	n := len(x)
	dst = dst[:n]
	i := 0
	if m := n &^ 7; useSIMD && m > 0 {
		axpyAVX2(&dst[0], &x[0], m, s)
		i = m
	}
	for ; i < n; i++ {
		dst[i] += s * x[i]
	}
}

// vAdd adds src to dst. Each element is one float32 addition, as in a plain
// loop, so the result is the same bit for bit on either path.
func vAdd(dst, src []float32) {
	n := len(src)
	dst = dst[:n]
	i := 0
	if m := n &^ 7; useSIMD && m > 0 {
		addAVX2(&dst[0], &src[0], m)
		i = m
	}
	for ; i < n; i++ {
		dst[i] += src[i]
	}
}

// vAdd3 writes dst = a + b, bit for bit as a plain loop.
func vAdd3(dst, a, b []float32) {
	n := len(a)
	dst, b = dst[:n], b[:n]
	i := 0
	if m := n &^ 7; useSIMD && m > 0 {
		add3AVX2(&dst[0], &a[0], &b[0], m)
		i = m
	}
	for ; i < n; i++ {
		dst[i] = a[i] + b[i]
	}
}

// vSum returns the sum of x.
func vSum(x []float32) float32 {
	n := len(x)
	var s float32
	i := 0
	if m := n &^ 7; useSIMD && m > 0 {
		s = sumAVX2(&x[0], m)
		i = m
	}
	for ; i < n; i++ {
		s += x[i]
	}
	return s
}

// vDot returns the dot product of x and y.
func vDot(x, y []float32) float32 {
	n := len(x)
	y = y[:n]
	var s float32
	i := 0
	if m := n &^ 7; useSIMD && m > 0 {
		s = dotAVX2(&x[0], &y[0], m)
		i = m
	}
	for ; i < n; i++ {
		s += x[i] * y[i]
	}
	return s
}

// vSumSqDev returns the sum of (x[i]-mean)².
func vSumSqDev(x []float32, mean float32) float32 {
	n := len(x)
	var s float32
	i := 0
	if m := n &^ 7; useSIMD && m > 0 {
		s = sumSqDevAVX2(&x[0], m, mean)
		i = m
	}
	for ; i < n; i++ {
		d := x[i] - mean
		s += d * d
	}
	return s
}

// vLNApply writes out[i] = (x[i]-mean)*rstd*w[i] + b[i].
func vLNApply(out, x, w, b []float32, mean, rstd float32) {
	n := len(x)
	out, w, b = out[:n], w[:n], b[:n]
	i := 0
	if m := n &^ 7; useSIMD && m > 0 {
		lnApplyAVX2(&out[0], &x[0], &w[0], &b[0], m, mean, rstd)
		i = m
	}
	for ; i < n; i++ {
		out[i] = (x[i]-mean)*rstd*w[i] + b[i]
	}
}

// vLNBwdSums returns the sums over i of w[i]*d[i] and of
// w[i]*d[i]*(x[i]-mean)*rstd: LayerNorm backward's two reductions.
func vLNBwdSums(x, d, w []float32, mean, rstd float32) (dnorm, dnormNorm float32) {
	n := len(x)
	d, w = d[:n], w[:n]
	i := 0
	if m := n &^ 7; useSIMD && m > 0 {
		dnorm, dnormNorm = lnBwdSumsAVX2(&x[0], &d[0], &w[0], m, mean, rstd)
		i = m
	}
	for ; i < n; i++ {
		norm := (x[i] - mean) * rstd
		dn := w[i] * d[i]
		dnorm += dn
		dnormNorm += dn * norm
	}
	return dnorm, dnormNorm
}

// vLNBwdApply accumulates LayerNorm backward into one row: db += d,
// dw += norm*d, di += (w*d - a - norm*b)*rstd with norm = (x-mean)*rstd,
// where a and b are the means vLNBwdSums' sums give.
func vLNBwdApply(di, dw, db, x, d, w []float32, mean, rstd, a, b float32) {
	n := len(x)
	di, dw, db, d, w = di[:n], dw[:n], db[:n], d[:n], w[:n]
	i := 0
	if m := n &^ 7; useSIMD && m > 0 {
		lnBwdApplyAVX2(&di[0], &dw[0], &db[0], &x[0], &d[0], &w[0], m, mean, rstd, a, b)
		i = m
	}
	for ; i < n; i++ {
		norm := (x[i] - mean) * rstd
		dn := w[i] * d[i]
		db[i] += d[i]
		dw[i] += norm * d[i]
		di[i] += (dn - a - norm*b) * rstd
	}
}

// vSoftmaxBwd replaces d[i] by scale*p[i]*(d[i]-s).
func vSoftmaxBwd(d, p []float32, s, scale float32) {
	n := len(p)
	d = d[:n]
	i := 0
	if m := n &^ 7; useSIMD && m > 0 {
		softmaxBwdAVX2(&d[0], &p[0], m, s, scale)
		i = m
	}
	for ; i < n; i++ {
		d[i] = scale * p[i] * (d[i] - s)
	}
}

// adamConsts are the per-step scalars of the vector AdamW update.
type adamConsts struct {
	gradScale, beta1, oneMinusBeta1, beta2, oneMinusBeta2 float32
	b1c, b2c, lr, eps, weightDecay                        float32
}

// vAdamW applies one AdamW step to params[i] (see AdamW) and zeroes the
// gradients. Both paths do the same float32 operations in the same order
// without fused multiply-adds, so they agree bit for bit.
func vAdamW(params, grads, m, v []float32, c *adamConsts) {
	n := len(params)
	grads, m, v = grads[:n], m[:n], v[:n]
	i := 0
	if k := n &^ 7; useSIMD && k > 0 {
		adamwAVX2(&params[0], &grads[0], &m[0], &v[0], k, c)
		i = k
	}
	for ; i < n; i++ {
		p := params[i]
		g := grads[i] * c.gradScale
		mi := c.beta1*m[i] + c.oneMinusBeta1*g
		vi := c.beta2*v[i] + c.oneMinusBeta2*g*g
		m[i], v[i] = mi, vi
		mhat := mi / c.b1c
		vhat := vi / c.b2c
		params[i] = p - c.lr*(mhat/(float32(math.Sqrt(float64(vhat)))+c.eps)+c.weightDecay*p)
		grads[i] = 0
	}
}
