package device

import (
	"math"
	"math/rand"
	"runtime"
	"strings"
	"testing"
	"time"

	"memprobe/ledger"
	"memprobe/trainer/device/cudadrv"
	"memprobe/trainer/gemm"
)

func randSlice(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = r.Float32()*2 - 1
	}
	return s
}

func openCPU(t *testing.T, acct *ledger.Account) Device {
	t.Helper()
	d, err := Open("cpu", gemm.Naive{}, acct)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestOpenErrors(t *testing.T) {
	// cuda is in every build; with no driver (or no cgo) it is refused in
	// one line.
	t.Setenv(cudadrv.EnvLibCUDA, "/nonexistent/libcuda.so.1")
	want := "device cuda: no CUDA driver: /nonexistent/libcuda.so.1 not found"
	if _, err := cudadrv.Load(); err == cudadrv.ErrNoCgo {
		want = "device cuda: " + err.Error()
	}
	for _, err := range []error{Available("cuda"), func() error { _, err := Open("cuda", nil, nil); return err }()} {
		if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("cuda without a driver: %v, want one line starting %q", err, want)
		}
	}
	_, err := Open("tpu", nil, nil)
	if err == nil || !strings.Contains(err.Error(), "cpu") {
		t.Errorf("Open(tpu) = %v, want an error listing cpu", err)
	}
	if err2 := Available("tpu"); err2 == nil || err2.Error() != err.Error() {
		t.Errorf("Available(tpu) = %v, want Open's error %v", err2, err)
	}
	if err := Available("cpu"); err != nil {
		t.Errorf("Available(cpu) = %v", err)
	}
}

func TestCopyRoundTripAndStats(t *testing.T) {
	acct := ledger.New().Account(ledger.DeviceBuffers)
	d := openCPU(t, acct)
	b, err := d.Alloc("test", 10)
	if err != nil {
		t.Fatal(err)
	}
	src := []float32{1, 2, 3, 4}
	if err := d.CopyToDevice(b, 3, src); err != nil {
		t.Fatal(err)
	}
	dst := make([]float32, 4)
	if err := d.CopyToHost(dst, b, 3); err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	for i := range src {
		if dst[i] != src[i] {
			t.Fatalf("round trip: got %v, want %v", dst, src)
		}
	}
	s := d.Stats()
	if !s.DeviceTimed || s.HostWaitNs < 0 || s.DeviceBusyNs < 0 {
		t.Errorf("cpu timing: timed %v, host wait %d ns, busy %d ns", s.DeviceTimed, s.HostWaitNs, s.DeviceBusyNs)
	}
	s.HostWaitNs, s.DeviceBusyNs, s.DeviceTimed = 0, 0, false // measured: TestCPUTiming
	want := Stats{Syncs: 1, H2DCopies: 1, D2HCopies: 1, H2DBytes: 16, D2HBytes: 16, DeviceBytesInUse: 40, DeviceBytesPeak: 40}
	if s != want {
		t.Errorf("stats = %+v, want %+v", s, want)
	}
	if acct.Current() != 40 {
		t.Errorf("ledger current = %d, want 40", acct.Current())
	}
	if err := d.CopyToDevice(b, 8, src); err == nil {
		t.Error("copy past the end: no error")
	}
	if err := d.Free(b); err != nil {
		t.Fatal(err)
	}
	if err := d.Free(b); err == nil {
		t.Error("double free: no error")
	}
	if err := d.CopyToDevice(b, 0, src); err == nil {
		t.Error("copy to a freed buffer: no error")
	}
	if got := d.Stats().DeviceBytesInUse; got != 0 {
		t.Errorf("in use after free = %d", got)
	}
	if _, err := d.Alloc("test", 5); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if got := d.Stats().DeviceBytesInUse; got != 0 || acct.Current() != 0 {
		t.Errorf("after Close: in use %d, ledger %d; want 0", got, acct.Current())
	}
	if err := d.Sync(); err != ErrClosed {
		t.Errorf("Sync after Close = %v, want ErrClosed", err)
	}
}

// TestKernels checks Logits and SoftmaxSample against a float64 host
// reference: probabilities within 1e-6, tokens and losses exact or 1e-5.
// TestCPUTiming checks the cpu device's clocks by what must hold whatever
// the machine's speed: the stream's busy time and the host's waits are
// sums of disjoint intervals inside the test's own span, so neither
// exceeds it; a product of ~100 MFLOP is work the stream's clock sees;
// and work the host does not wait for (queued, then run while the host
// sleeps) is busy time but no wait.
func TestCPUTiming(t *testing.T) {
	span := time.Now()
	d := openCPU(t, nil)
	const rows, C, V = 64, 256, 788
	out, _ := d.Alloc("out", rows*V)
	hidden, _ := d.Alloc("hidden", rows*C)
	weight, _ := d.Alloc("weight", V*C)
	if err := d.Logits(out, hidden, weight, rows, C, V); err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	s := d.Stats()
	if s.DeviceBusyNs <= 0 || s.HostWaitNs <= 0 || !s.DeviceTimed {
		t.Errorf("after a %d×%d×%d product and a Sync: busy %d ns, host wait %d ns, timed %v; want both > 0, timed", rows, V, C, s.DeviceBusyNs, s.HostWaitNs, s.DeviceTimed)
	}
	if elapsed := int64(time.Since(span)); s.DeviceBusyNs > elapsed || s.HostWaitNs > elapsed {
		t.Errorf("busy %d ns or host wait %d ns exceeds the %d ns the test has run", s.DeviceBusyNs, s.HostWaitNs, elapsed)
	}
	// Queued work the host never waits for: busy grows, the waits do not.
	if err := d.Logits(out, hidden, weight, rows, C, V); err != nil {
		t.Fatal(err)
	}
	for d.Stats().DeviceBusyNs == s.DeviceBusyNs {
		runtime.Gosched() // the stream runs it on its own thread
	}
	if s2 := d.Stats(); s2.HostWaitNs != s.HostWaitNs || s2.Syncs != s.Syncs {
		t.Errorf("work nobody waited for changed the waits: %d → %d ns, syncs %d → %d", s.HostWaitNs, s2.HostWaitNs, s.Syncs, s2.Syncs)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestKernels(t *testing.T) {
	const rows, C, V = 5, 16, 37
	r := rand.New(rand.NewSource(1))
	hidden, weight := randSlice(r, rows*C), randSlice(r, V*C)
	targets := make([]float32, rows)
	for i := range targets {
		targets[i] = float32(r.Intn(V))
	}
	d := openCPU(t, nil)
	defer d.Close()
	bh, _ := d.Alloc("test", rows*C)
	bw, _ := d.Alloc("test", V*C)
	bl, _ := d.Alloc("test", rows*V)
	bt, _ := d.Alloc("test", rows)
	bo, _ := d.Alloc("test", rows*OutStride)
	d.CopyToDevice(bh, 0, hidden)
	d.CopyToDevice(bw, 0, weight)
	d.CopyToDevice(bt, 0, targets)
	if err := d.Logits(bl, bh, bw, rows, C, V); err != nil {
		t.Fatal(err)
	}
	if err := d.SoftmaxSample(bo, bl, bt, rows, V, Sampling{}); err != nil {
		t.Fatal(err)
	}
	probs, out := make([]float32, rows*V), make([]float32, rows*OutStride)
	d.CopyToHost(probs, bl, 0)
	d.CopyToHost(out, bo, 0)
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := d.Stats().Launches; got != 2 {
		t.Errorf("launches = %d, want 2", got)
	}
	var maxDiff float64
	for i := 0; i < rows; i++ {
		logit := make([]float64, V)
		arg := 0
		for v := 0; v < V; v++ {
			for c := 0; c < C; c++ {
				logit[v] += float64(hidden[i*C+c]) * float64(weight[v*C+c])
			}
			if logit[v] > logit[arg] {
				arg = v
			}
		}
		var sum float64
		for v := range logit {
			sum += math.Exp(logit[v] - logit[arg])
		}
		for v := range logit {
			p := math.Exp(logit[v]-logit[arg]) / sum
			maxDiff = math.Max(maxDiff, math.Abs(p-float64(probs[i*V+v])))
		}
		if int(out[i*OutStride]) != arg {
			t.Errorf("row %d: token %v, want %d", i, out[i*OutStride], arg)
		}
		wantLoss := -(logit[int(targets[i])] - logit[arg] - math.Log(sum))
		if math.Abs(wantLoss-float64(out[i*OutStride+1])) > 1e-5 {
			t.Errorf("row %d: loss %v, want %v", i, out[i*OutStride+1], wantLoss)
		}
	}
	t.Logf("largest probability difference from the float64 reference: %g", maxDiff)
	if maxDiff > 1e-6 {
		t.Errorf("probabilities differ by %g > 1e-6", maxDiff)
	}
}

func TestStickyError(t *testing.T) {
	d := openCPU(t, nil)
	defer d.Close()
	bl, _ := d.Alloc("test", 4)
	bo, _ := d.Alloc("test", OutStride)
	bt, _ := d.Alloc("test", 1)
	d.CopyToDevice(bt, 0, []float32{9}) // not below V=4
	if err := d.SoftmaxSample(bo, bl, bt, 1, 4, Sampling{}); err != nil {
		t.Fatal(err)
	}
	err := d.Sync()
	if err == nil || !strings.Contains(err.Error(), "target") {
		t.Fatalf("Sync = %v, want the bad-target error", err)
	}
	if err2 := d.Sync(); err2 == nil {
		t.Error("error is not sticky")
	}
}

func TestUniform(t *testing.T) {
	var sum float64
	for i := uint64(0); i < 10000; i++ {
		u := Uniform(7, i)
		if u < 0 || u >= 1 {
			t.Fatalf("Uniform(7, %d) = %v outside [0, 1)", i, u)
		}
		sum += u
	}
	if m := sum / 10000; math.Abs(m-0.5) > 0.02 {
		t.Errorf("mean %v, want about 0.5", m)
	}
}

// A Buffer belongs to the device that made it: another cpu device refuses
// it even where its own first buffer has the same id and length, and a
// Buffer kept past its Free is refused even after a new allocation of the
// same size.
func TestForeignAndStaleBuffers(t *testing.T) {
	d1, d2 := openCPU(t, nil), openCPU(t, nil)
	defer d1.Close()
	defer d2.Close()
	b1, err := d1.Alloc("one", 8)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d2.Alloc("two", 8); err != nil {
		t.Fatal(err)
	}
	const want = "buffer is not allocated on this device"
	if err := d2.CopyToDevice(b1, 0, make([]float32, 8)); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("d2.CopyToDevice(d1's buffer) = %v, want %q", err, want)
	}
	if err := d2.Free(b1); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("d2.Free(d1's buffer) = %v, want %q", err, want)
	}
	if err := d1.Free(b1); err != nil {
		t.Fatal(err)
	}
	if _, err := d1.Alloc("again", 8); err != nil {
		t.Fatal(err)
	}
	if err := d1.CopyToDevice(b1, 0, make([]float32, 8)); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("CopyToDevice(freed buffer) = %v, want %q", err, want)
	}
}
