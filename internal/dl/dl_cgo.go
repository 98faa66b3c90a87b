//go:build cgo

package dl

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>

typedef uintptr_t u;
typedef u (*fn14)(u, u, u, u, u, u, u, u, u, u, u, u, u, u);

// memprobe_call14 calls f with 14 integer-class arguments. The functions
// called this way take at most 14, all integers, handles or pointers; a
// callee with fewer parameters ignores the rest (they travel in
// registers and on the caller's stack, which the caller cleans up: the
// System V x86-64 and AAPCS64 conventions). An int result is the low 32
// bits of the returned register.
static u memprobe_call14(u f, u a1, u a2, u a3, u a4, u a5, u a6, u a7, u a8, u a9, u a10, u a11, u a12, u a13, u a14) {
	return ((fn14)f)(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14);
}

static u memprobe_dlopen(const char *name) { return (u)dlopen(name, RTLD_NOW | RTLD_LOCAL); }
static u memprobe_dlsym(u h, const char *name) { dlerror(); return (u)dlsym((void *)h, name); }
static const char *memprobe_dlerror(void) { return dlerror(); }
static int memprobe_dlclose(u h) { return dlclose((void *)h); }
*/
import "C"

import (
	"errors"
	"unsafe"
)

func dlopen(name string) (uintptr, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	h := C.memprobe_dlopen(cname)
	if h == 0 {
		return 0, errors.New(C.GoString(C.memprobe_dlerror()))
	}
	return uintptr(h), nil
}

func dlsym(h uintptr, name string) (uintptr, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	a := C.memprobe_dlsym(C.u(h), cname)
	if a == 0 {
		if e := C.memprobe_dlerror(); e != nil {
			return 0, errors.New(C.GoString(e))
		}
		return 0, errors.New("undefined symbol")
	}
	return uintptr(a), nil
}

func dlclose(h uintptr) error {
	if C.memprobe_dlclose(C.u(h)) != 0 {
		return errors.New(C.GoString(C.memprobe_dlerror()))
	}
	return nil
}

// callRaw calls fn with up to 14 arguments and returns its result register.
func callRaw(fn uintptr, args ...uintptr) uintptr {
	var a [MaxArgs]uintptr
	if len(args) > len(a) {
		panic("dl: more than 14 arguments")
	}
	copy(a[:], args)
	return uintptr(C.memprobe_call14(C.u(fn), C.u(a[0]), C.u(a[1]), C.u(a[2]), C.u(a[3]), C.u(a[4]), C.u(a[5]), C.u(a[6]),
		C.u(a[7]), C.u(a[8]), C.u(a[9]), C.u(a[10]), C.u(a[11]), C.u(a[12]), C.u(a[13])))
}
