//go:build cgo

package osthread

// This file holds only the exported callback: a file with //export may
// declare but not define C functions in its preamble (cgo copies it into
// two C files), so the thread code lives in thread_cgo.go.

/*
#include <stddef.h>
#include <stdint.h>
*/
import "C"

import "runtime/cgo"

//export memprobeOSThreadRun
func memprobeOSThreadRun(handle, lo C.uintptr_t, stack, guard C.size_t) {
	run(cgo.Handle(handle), uintptr(lo), int64(stack), int64(guard))
}
