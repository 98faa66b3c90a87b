// Package kernels holds the CUDA kernels of the cuda device as PTX, the
// NVIDIA virtual ISA, generated from CUDA C sources in this directory and
// embedded in the binary.
//
// Why PTX: the CUDA driver JIT-compiles PTX for whatever GPU it finds
// (cuModuleLoadData), so building the module needs neither the CUDA toolkit
// nor NVRTC, and a PTX written for an older architecture runs on every later
// one. The PTX is generated once by gen.sh with clang's NVPTX backend (no
// CUDA headers, no libdevice) and committed; the tests fail when a .cu no
// longer matches the sha256 recorded in its .ptx, i.e. when someone edited
// the source without running trainer/device/kernels/gen.sh.
//
// softmax_sample runs one thread block per row of logits, not one thread per
// row: a row is a whole vocabulary (tens of thousands of floats) and there
// are few rows per launch (one per sequence when decoding), so a thread per
// row would leave most of the GPU idle and walk each row serially. Instead
// the block's threads share each pass over the row (coalesced loads) and
// combine their partial max, sums and prefix sums through shared memory.
package kernels

import _ "embed"

// SoftmaxSamplePTX is the PTX module holding the SoftmaxSample kernel
// (softmax_sample.cu), for cuModuleLoadData. It is a NUL-free string; the
// driver wants it NUL-terminated, so pass a copy with a trailing 0 byte.
//
//go:embed softmax_sample.ptx
var SoftmaxSamplePTX string

const (
	// SoftmaxSampleName is the kernel's entry name in SoftmaxSamplePTX:
	//
	//	extern "C" __global__ void softmax_sample(float* out, float* logits,
	//		const float* targets, int rows, int V, float temperature,
	//		unsigned long long seed, unsigned long long pos)
	//
	// It follows the cpu device's softmaxSampleRows: row r of logits (rows,
	// V) becomes softmax(row) in place, out[2r] is the token (argmax, the
	// first on ties, when temperature <= 0, else a draw from
	// softmax(row/temperature) with Uniform(seed, pos+r)), out[2r+1] the
	// loss: 0 when targets is NULL, NaN for a target that is not an integer
	// in [0, V).
	SoftmaxSampleName = "softmax_sample"
	// SoftmaxSampleBlock is the block size to launch it with: grid (rows,
	// 1, 1), block (SoftmaxSampleBlock, 1, 1), no dynamic shared memory. It
	// is also the most the kernel accepts (.maxntid 1024); a block of fewer
	// threads (n, 1, 1) is still correct, its sums running in another order.
	SoftmaxSampleBlock = 1024
	// SoftmaxSampleParams is the number of kernel parameters, in the order
	// above: three device pointers (8 bytes each), two int32, one float32
	// and two uint64, as cuLaunchKernel's kernelParams.
	SoftmaxSampleParams = 8
)
