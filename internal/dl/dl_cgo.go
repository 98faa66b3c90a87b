//go:build cgo

package dl

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
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

// dlerror's text belongs to the OS thread, and a goroutine may move to
// another thread between two cgo calls: each call below reads it in the
// same C call as the call that failed, and copies it into err (errlen
// bytes, NUL-terminated; "" when dlerror has none).
static void memprobe_copyerr(char *err, size_t errlen) {
	const char *e = dlerror();
	snprintf(err, errlen, "%s", e != NULL ? e : "");
}
static u memprobe_dlopen(const char *name, char *err, size_t errlen) {
	void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		memprobe_copyerr(err, errlen);
	}
	return (u)h;
}
static u memprobe_dlsym(u h, const char *name, char *err, size_t errlen) {
	dlerror();
	void *a = dlsym((void *)h, name);
	if (a == NULL) {
		memprobe_copyerr(err, errlen);
	}
	return (u)a;
}
static int memprobe_dlclose(u h, char *err, size_t errlen) {
	int r = dlclose((void *)h);
	if (r != 0) {
		memprobe_copyerr(err, errlen);
	}
	return r;
}
*/
import "C"

import (
	"errors"
	"unsafe"
)

// errBuf receives dlerror's text from the C side.
type errBuf [512]byte

func (b *errBuf) ptr() (*C.char, C.size_t) { return (*C.char)(unsafe.Pointer(&b[0])), C.size_t(len(b)) }

// err is the text copied into b, or otherwise if there was none.
func (b *errBuf) err(otherwise string) error {
	if s := C.GoString((*C.char)(unsafe.Pointer(&b[0]))); s != "" {
		return errors.New(s)
	}
	return errors.New(otherwise)
}

func dlopen(name string) (uintptr, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var buf errBuf
	p, n := buf.ptr()
	h := C.memprobe_dlopen(cname, p, n)
	if h == 0 {
		return 0, buf.err(name + ": cannot open")
	}
	return uintptr(h), nil
}

func dlsym(h uintptr, name string) (uintptr, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var buf errBuf
	p, n := buf.ptr()
	a := C.memprobe_dlsym(C.u(h), cname, p, n)
	if a == 0 {
		return 0, buf.err("undefined symbol: " + name)
	}
	return uintptr(a), nil
}

func dlclose(h uintptr) error {
	var buf errBuf
	p, n := buf.ptr()
	if C.memprobe_dlclose(C.u(h), p, n) != 0 {
		return buf.err("dlclose failed")
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
