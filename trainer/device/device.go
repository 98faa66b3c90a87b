// Package device is the trainer's accelerator seam: a stream of copies and
// kernel launches that the host enqueues and waits for with Sync.
//
// It exists to measure design note 003 (a decode step that copies vectors by
// value and synchronises with the GPU once per token): the decoder in
// trainer/decode drives a Device, and the Device counts what a GPU profiler
// would see — launches, syncs, bytes each way, device memory in use — so
// that `probe decode` can put the per-token and batched decode side by side.
//
// Two devices exist. "cpu" is always built: a real asynchronous stream whose
// commands run on their own locked OS thread, over device memory that is its
// own allocation, with the logits product done by a gemm.Backend and the
// softmax and loss by nn.SoftmaxCrossEntropyForward, so that its results
// equal the host LM head's. "cuda" is
// always built too: it binds the CUDA driver and cuBLAS at run time
// (package cudadrv) and runs on any machine with the NVIDIA driver.
//
// Shapes use the trainer's short names: rows positions, C channels, V
// vocabulary. Token ids travel on the device as float32 values, which are
// exact below 2^24 (V is far smaller).
package device

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"memprobe/ledger"
	"memprobe/trainer/gemm"
	"memprobe/trainer/nn"
)

// Buffer is a handle to device memory holding Len() float32 values. It is a
// small value: copy it freely. The zero Buffer is "no buffer" (for example,
// no targets). A Buffer belongs to the Device that made it; using it after
// Free, or on another Device, is an error.
type Buffer struct {
	// id is the allocation's number on its device (book.newID): nonzero,
	// and never given to another allocation of that device, so a Buffer
	// kept past its Free stays refused. It is not the device address: the
	// CUDA driver hands a freed address out again.
	id  uint64
	n   int       // float32 elements
	mem []float32 // cpu: the device memory itself; nil on cuda
	ptr uint64    // cuda: the CUdeviceptr; 0 on cpu
}

// Len is the number of float32 values the buffer holds.
func (b Buffer) Len() int { return b.n }

// Valid reports whether b refers to an allocation (the zero Buffer does not).
func (b Buffer) Valid() bool { return b.id != 0 }

// Sampling selects how SoftmaxSample picks a token per row.
type Sampling struct {
	// Temperature 0 picks the argmax (greedy; the first maximum on ties).
	// Temperature > 0 draws from softmax(logits/Temperature).
	Temperature float32
	// Seed and Pos feed a counter-based generator: row r draws
	// Uniform(Seed, Pos+r), so the tokens do not depend on how the positions
	// were split into launches.
	Seed uint64
	Pos  uint64
}

// OutStride is the number of float32 values SoftmaxSample writes per row:
// out[r*OutStride] is the chosen token id, out[r*OutStride+1] the loss
// -ln p[target[r]] (0 when there are no targets).
const OutStride = 2

// Device is one stream on one accelerator. Methods that enqueue work return
// once the work is queued, not done: argument errors come back at once,
// errors while running come back from the next Sync and stay (a failed
// device is not usable again, as with CUDA's sticky errors).
//
// A Device is driven by one goroutine at a time, like a stream handle;
// only Stats and Name may be called concurrently with the others.
type Device interface {
	// Name is the registry name ("cpu", "cuda").
	Name() string

	// Alloc returns a buffer of n float32 values, zeroed, counted in Stats,
	// in Buffers under name (what it holds: "decode.lm_head") and in the
	// ledger account given to Open. It does not wait for queued work.
	Alloc(name string, n int) (Buffer, error)
	// Free releases b. Work already queued that uses b still completes.
	Free(b Buffer) error

	// CopyToDevice enqueues dst[dstOff:dstOff+len(src)] = src. The copy
	// happens later, on the stream: src must not be modified until the next
	// Sync returns.
	CopyToDevice(dst Buffer, dstOff int, src []float32) error
	// CopyToHost enqueues dst = src[srcOff:srcOff+len(dst)]. dst is written
	// on the stream: it must stay valid and must not be read until the next
	// Sync returns.
	CopyToHost(dst []float32, src Buffer, srcOff int) error

	// Logits enqueues out = hidden · weightᵀ, one launch:
	// out (rows, V), hidden (rows, C), weight (V, C), all row-major.
	Logits(out, hidden, weight Buffer, rows, C, V int) error
	// SoftmaxSample enqueues one launch that, for each of rows rows of
	// logits (rows, V): picks a token from the logits as s says, replaces
	// the row by its softmax probabilities (in place, temperature 1: the
	// probabilities the loss and the backward pass use), and writes
	// out (rows, OutStride): token id, and the cross-entropy loss
	// -ln p[target] (computed as ln Σexp(logit-max) + max - logit[target])
	// where targets (rows; ids as float32) is valid, else 0.
	SoftmaxSample(out, logits, targets Buffer, rows, V int, s Sampling) error

	// Sync enqueues a fence and waits until everything queued before it has
	// run. It returns the first error the stream met.
	Sync() error
	// Stats returns the counters so far.
	Stats() Stats
	// Buffers is the device ledger: the bytes of the live buffers by the
	// name they were allocated under, largest first.
	Buffers() []BufferUse
	// Close waits for queued work, frees every buffer still allocated and
	// stops the stream. Calls after Close return ErrClosed.
	Close() error
}

// HostMemory is implemented by devices whose copies are faster from and
// into host memory they allocate themselves: on a GPU, page-locked
// (pinned) memory, which the copy engine reaches by DMA while the host
// goes on. A copy whose host side is an ordinary Go slice must go through
// the device's own pinned staging (cuda): the host copies the values once
// more, between the slice and the staging, and for a device-to-host copy
// it does so after the wait, on the critical path — at the GPT-2 head's
// (T, V) probabilities, 25.7 MB a sequence, that second copy costs more
// than the transfer. CopyToDevice from and CopyToHost into a slice that
// lies wholly inside one block AllocHost returned skip the staging: the
// device's DMA reads or writes the caller's memory itself. The contract of
// those calls is unchanged, and now it bites: CopyToHost's dst holds the
// values only once the next Sync returns (reading it before gets older
// values or a mix), and CopyToDevice's src must not change until then
// (the device reads it when the stream gets to the copy, not at the call).
//
// Find it with a type assertion: dev.(device.HostMemory). The cpu device
// does not implement it (its device memory is host memory; a Go slice
// serves as well).
type HostMemory interface {
	// AllocHost returns n float32 values of page-locked host memory,
	// zeroed, owned by the caller until FreeHost or the device's Close.
	// name says what it holds ("decode.probs"), for HostBuffers. The
	// memory is outside the Go heap: the slice must not be used after
	// FreeHost or Close, nor grown by append past its length (that
	// would copy it to the Go heap and lose the fast path). Its bytes
	// count in Stats.PinnedHostBytes.
	AllocHost(name string, n int) ([]float32, error)
	// FreeHost frees a block AllocHost returned (p must start where it
	// started). It first waits for the stream (counted in Stats.Syncs and
	// Stats.ImplicitWaits, as before freeing device memory), since a copy
	// queued before may still read or write the block.
	FreeHost(p []float32) error
	// HostBuffers lists the blocks AllocHost handed out and that are not
	// freed yet, by the name they were allocated under, largest first:
	// the part of Stats.PinnedHostBytes the caller owns (the rest is the
	// device's staging).
	HostBuffers() []BufferUse
}

// Stats are a device's cumulative counters. Byte counts are bytes.
type Stats struct {
	Launches int64 `json:"launches"` // kernels enqueued (Logits, SoftmaxSample)
	// Syncs counts every time the host waited for the device: Sync calls
	// and the waits a device makes on its own (ImplicitWaits), so that
	// syncs per token is the real number of waits.
	Syncs            int64 `json:"syncs"`
	H2DCopies        int64 `json:"h2d_copies"`
	D2HCopies        int64 `json:"d2h_copies"`
	H2DBytes         int64 `json:"h2d_bytes"`
	D2HBytes         int64 `json:"d2h_bytes"`
	DeviceBytesInUse int64 `json:"device_bytes_in_use"` // allocated and not freed
	DeviceBytesPeak  int64 `json:"device_bytes_peak"`
	// ImplicitWaits are the waits, counted in Syncs too, that no Sync call
	// asked for: cuda waits when its pinned staging is full between two
	// Syncs and before freeing memory the stream may still use.
	ImplicitWaits int64 `json:"implicit_waits"`
	// PinnedHostBytes is the page-locked host memory the device holds
	// (cuda; 0 on cpu): its staging for copies and its parameter block,
	// and the blocks HostMemory.AllocHost handed out and not yet freed
	// (HostMemory.HostBuffers names those). Host memory, part of RSS.
	PinnedHostBytes int64 `json:"pinned_host_bytes"`
	// HostWaitNs is the wall time the host spent blocked in the waits
	// Syncs counts: what a per-token sync costs the host beyond its own
	// work.
	HostWaitNs int64 `json:"host_wait_ns"`
	// DeviceBusyNs is the time the device spent on its queued work: on
	// cpu, the stream thread's time running commands (two clock reads a
	// command); on cuda, between two waits, the span from the first
	// command enqueued after the last wait to the wait's own fence, timed
	// by a pair of CUDA events on the stream (two cuEventRecord calls a
	// wait). The cuda span includes any gap in which the GPU waited for
	// the host to enqueue the next command, so it bounds the GPU's busy
	// time from above. Set only where DeviceTimed.
	DeviceBusyNs int64 `json:"device_busy_ns"`
	// DeviceTimed says DeviceBusyNs was measured: always on cpu; on cuda
	// when the driver exports the event calls and none failed.
	DeviceTimed bool `json:"device_timed"`
}

// Add adds o's counters to s: the figures of several devices (a trainer's
// executors) summed. DeviceTimed stays true only if both were timed, so
// a sum starts from the first device's Stats, not from zero.
func (s *Stats) Add(o Stats) {
	s.Launches += o.Launches
	s.Syncs += o.Syncs
	s.H2DCopies += o.H2DCopies
	s.D2HCopies += o.D2HCopies
	s.H2DBytes += o.H2DBytes
	s.D2HBytes += o.D2HBytes
	s.DeviceBytesInUse += o.DeviceBytesInUse
	s.DeviceBytesPeak += o.DeviceBytesPeak
	s.ImplicitWaits += o.ImplicitWaits
	s.PinnedHostBytes += o.PinnedHostBytes
	s.HostWaitNs += o.HostWaitNs
	s.DeviceBusyNs += o.DeviceBusyNs
	s.DeviceTimed = s.DeviceTimed && o.DeviceTimed
}

// BufferUse is one line of the device ledger.
type BufferUse struct {
	Name  string `json:"name"`
	Bytes int64  `json:"bytes"`
}

// ErrClosed is returned by calls on a closed Device.
var ErrClosed = errors.New("device is closed")

// Opener makes a device; g is the GEMM backend for devices that compute on
// the host (nil: gemm.Default()), acct the ledger account for device memory
// (nil counts nothing).
type Opener func(g gemm.Backend, acct *ledger.Account) (Device, error)

var registry = map[string]Opener{}

// register is called from init by each device compiled in.
func register(name string, o Opener) { registry[name] = o }

// Names lists the devices compiled into this binary.
func Names() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Available returns nil if the named device can be opened here, else the
// error Open would return, without allocating anything: commands check
// their flags with it before doing any work. Every device is compiled into
// every binary; cuda also needs the NVIDIA driver (libcuda.so.1) and a GPU,
// and is refused in one line where they are missing.
func Available(name string) error {
	if err := Check(name); err != nil {
		return err
	}
	if name == "cuda" {
		return cudaAvailable()
	}
	return nil
}

// Check reports whether name names a device of this build, whether or not
// this machine can open it (Available says that): a name the build lacks
// is a bad command line, a driver the machine lacks is not.
func Check(name string) error {
	if _, ok := registry[name]; ok {
		return nil
	}
	return fmt.Errorf("device %q is not available in this build (have: %s)", name, strings.Join(Names(), ", "))
}

// Open returns the named device. Account device memory to
// acct (for example ledger.Account(ledger.DeviceBuffers)).
func Open(name string, g gemm.Backend, acct *ledger.Account) (Device, error) {
	if err := Available(name); err != nil {
		return nil, err
	}
	return registry[name](g, acct)
}

// Uniform is the generator SoftmaxSample draws with: a uniform value in
// [0, 1) from (seed, pos) by SplitMix64. It is exported so that references
// can reproduce sampled tokens.
func Uniform(seed, pos uint64) float64 {
	z := seed + (pos+1)*0x9E3779B97F4A7C15
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	z ^= z >> 31
	return float64(z>>11) / (1 << 53)
}

// softmaxSampleRows is the SoftmaxSample kernel on host memory: the cpu
// device runs it on its stream, and it is the definition the cuda kernel
// follows. logits (rows, V) become probabilities; targets is (rows) or nil;
// out is (rows, OutStride). A target outside [0, V) is an error. scratch
// holds at least V floats: each row's logits are copied there so that the
// softmax and the loss are nn.SoftmaxCrossEntropyForward itself, one row at
// a time, writing the probabilities back in place: with the same logits the
// probabilities and losses equal the host LM head's bit for bit, whatever
// that kernel's arithmetic (it treats rows independently).
func softmaxSampleRows(out, logits, targets []float32, rows, V int, s Sampling, scratch []float32) error {
	scratch = scratch[:V]
	var tg [1]uint16
	var loss [1]float32
	for r := 0; r < rows; r++ {
		tg[0] = 0
		if targets != nil {
			t := targets[r]
			if !(t >= 0 && t < float32(V)) || t != float32(int(t)) {
				return fmt.Errorf("softmax: target %v of row %d is not a token id below V=%d", t, r, V)
			}
			tg[0] = uint16(t)
		}
		row := logits[r*V : (r+1)*V]
		maxv, arg := row[0], 0
		for i, v := range row {
			if v > maxv {
				maxv, arg = v, i
			}
		}
		tok := arg
		if s.Temperature > 0 {
			invT := 1 / s.Temperature
			var sum float32
			for _, v := range row {
				sum += float32(math.Exp(float64((v - maxv) * invT)))
			}
			u := float32(Uniform(s.Seed, s.Pos+uint64(r))) * sum
			var cum float32
			tok = V - 1
			for i, v := range row {
				cum += float32(math.Exp(float64((v - maxv) * invT)))
				if u < cum {
					tok = i
					break
				}
			}
		}
		copy(scratch, row)
		nn.SoftmaxCrossEntropyForward(loss[:], row, scratch, tg[:], 1, V)
		out[r*OutStride] = float32(tok)
		out[r*OutStride+1] = 0
		if targets != nil {
			out[r*OutStride+1] = loss[0]
		}
	}
	return nil
}
