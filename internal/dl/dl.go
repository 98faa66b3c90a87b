// Package dl opens shared libraries at run time and calls their C
// functions, for the bindings that must build on machines without the
// library or its headers: the CUDA driver and cuBLAS
// (trainer/device/cudadrv) and NVML (instrument/gpumem).
//
// One cgo trampoline calls any function of up to 14 integer-class
// arguments (integers, handles, pointers): every entry point those
// bindings use is of that kind, so no declaration of the library is
// needed. A cgo call with scalar arguments allocates nothing on the Go
// heap, which matters on a per-token path (purego.SyscallN, tried first,
// allocates its argument slice on every call; NVIDIA's go-nvml links the
// whole program with --export-dynamic, which cost 1.1 MiB of RSS at start
// in every probe child). Without cgo the package compiles and every Open
// fails with ErrNoCgo.
package dl

import (
	"errors"
	"unsafe"
)

// ErrNoCgo is Open's error in a binary built without cgo.
var ErrNoCgo = errors.New("this binary was built without cgo (CGO_ENABLED=0), which loading a shared library needs")

// MaxArgs is the most arguments Call passes.
const MaxArgs = 14

// Library is an opened shared object.
type Library struct {
	Name   string // as given to Open
	handle uintptr
}

// Open opens the library name (a soname looked up on the loader's path,
// or a file path) with RTLD_NOW | RTLD_LOCAL. The error is dlerror's text.
func Open(name string) (*Library, error) {
	h, err := dlopen(name)
	if err != nil {
		return nil, err
	}
	return &Library{Name: name, handle: h}, nil
}

// Close drops this reference to the library (dlclose); the loader unmaps
// it when none is left. Bindings that live as long as the process never
// close theirs.
func (l *Library) Close() error { return dlclose(l.handle) }

// Sym returns the address of symbol name; the error is dlerror's text.
func (l *Library) Sym(name string) (uintptr, error) { return dlsym(l.handle, name) }

// Call calls the C function at fn with args (at most MaxArgs, each an
// integer, a handle, a device pointer or a pointer to C memory) and
// returns the result register: an int result is its low 32 bits. It
// allocates nothing.
func Call(fn uintptr, args ...uintptr) uintptr { return callRaw(fn, args...) }

// CallOut is Call for arguments that are Go pointers converted to
// uintptr in the call expression (out-parameters, names): the
// go:uintptrescapes directive moves what they point to to the heap and
// keeps it alive for the call, so a goroutine stack that grows before the
// C call cannot leave the library writing to a stale copy. Each such call
// allocates; keep it off per-token paths.
//
//go:uintptrescapes
func CallOut(fn uintptr, args ...uintptr) uintptr { return callRaw(fn, args...) }

// GoString copies the NUL-terminated C string at p (0: ""), which must be
// C memory (a library's string), never a Go buffer.
func GoString(p uintptr) string {
	if p == 0 {
		return ""
	}
	var n uintptr
	for *(*byte)(unsafe.Add(unsafe.Pointer(nil), p+n)) != 0 {
		n++
	}
	return string(unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(nil), p)), n))
}
