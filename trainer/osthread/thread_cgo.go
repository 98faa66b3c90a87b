//go:build cgo

package osthread

/*
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

extern void memprobeOSThreadRun(uintptr_t handle, uintptr_t lo, size_t stack, size_t guard);

// memprobe_thread_main is the thread's start routine: it reads where the C
// library put the thread's stack (pthread_getattr_np: the lowest address
// and the size, which excludes the guard below it) and runs the Go
// function until it returns.
static void *memprobe_thread_main(void *arg) {
	void *lo = NULL;
	size_t stack = 0, guard = 0;
	pthread_attr_t a;
	if (pthread_getattr_np(pthread_self(), &a) == 0) {
		pthread_attr_getstack(&a, &lo, &stack);
		pthread_attr_getguardsize(&a, &guard);
		pthread_attr_destroy(&a);
	}
	memprobeOSThreadRun((uintptr_t)arg, (uintptr_t)lo, stack, guard);
	return NULL;
}

// memprobe_thread_start creates a joinable thread with the given stack size.
// *step says which call failed: 0 pthread_attr_init, 1
// pthread_attr_setstacksize, 2 pthread_create.
static int memprobe_thread_start(size_t stack, uintptr_t handle, pthread_t *out, int *step) {
	pthread_attr_t attr;
	*step = 0;
	int rc = pthread_attr_init(&attr);
	if (rc != 0) {
		return rc;
	}
	*step = 1;
	rc = pthread_attr_setstacksize(&attr, stack);
	if (rc == 0) {
		*step = 2;
		rc = pthread_create(out, &attr, memprobe_thread_main, (void *)handle);
	}
	pthread_attr_destroy(&attr);
	return rc;
}

static int memprobe_thread_join(pthread_t t) { return pthread_join(t, NULL); }

// memprobe_default_stack is the stack size pthread_create gives a thread
// when the caller sets none.
static size_t memprobe_default_stack(void) {
	size_t s = 0;
	pthread_attr_t a;
	if (pthread_attr_init(&a) == 0) {
		pthread_attr_getstacksize(&a, &s);
		pthread_attr_destroy(&a);
	}
	return s;
}
*/
import "C"

import (
	"fmt"
	"runtime/cgo"
	"sync"
	"syscall"
)

// Available reports whether Start can create threads (true with cgo).
func Available() bool { return true }

// DefaultStackBytes is the stack size the C library gives a thread whose
// creator sets none (glibc: RLIMIT_STACK, 8 MiB with `ulimit -s 8192`).
func DefaultStackBytes() int64 { return int64(C.memprobe_default_stack()) }

// Thread is an OS thread running one Go function.
type Thread struct {
	fn      func()
	started chan struct{}
	stack   int64 // as pthread_getattr_np reports it
	lo      uintptr
	guard   int64

	tid      C.pthread_t
	joinOnce sync.Once
	joinErr  error
}

// Start creates a thread with a stack of stackBytes (MinStackBytes to
// MaxStackBytes) and runs fn on it; the thread exits when fn returns. Start
// returns once fn has begun. fn's goroutine is locked to the thread for its
// whole life, as every cgo callback's is.
func Start(stackBytes int64, fn func()) (*Thread, error) {
	if stackBytes < MinStackBytes || stackBytes > MaxStackBytes {
		return nil, fmt.Errorf("worker stacks: stack size %d bytes out of range [%d, %d]", stackBytes, MinStackBytes, MaxStackBytes)
	}
	th := &Thread{fn: fn, started: make(chan struct{})}
	h := cgo.NewHandle(th)
	var step C.int
	if rc := C.memprobe_thread_start(C.size_t(stackBytes), C.uintptr_t(h), &th.tid, &step); rc != 0 {
		h.Delete()
		call := [...]string{"pthread_attr_init", "pthread_attr_setstacksize", "pthread_create"}[step]
		err := fmt.Errorf("worker stacks: %s with a %d-byte stack: %w", call, stackBytes, syscall.Errno(rc))
		if step == 2 && syscall.Errno(rc) == syscall.EINVAL {
			// glibc places the thread's static TLS (OpenBLAS alone has
			// 60 KiB of it) at the top of the stack and refuses a stack
			// that cannot hold it.
			err = fmt.Errorf("%w (the stack must also hold the thread's static TLS; try a larger size)", err)
		}
		return nil, err
	}
	<-th.started
	return th, nil
}

// run is the thread's life in Go: called once, from the thread's start
// routine, through the exported memprobeOSThreadRun (export_cgo.go). The
// thread's stack is in the registry (Stacks) from before Start returns
// until fn has returned.
func run(h cgo.Handle, lo uintptr, stack, guard int64) {
	th := h.Value().(*Thread)
	h.Delete()
	th.lo, th.stack, th.guard = lo, stack, guard
	register(th, Stack{Lo: lo, Hi: lo + uintptr(stack), GuardBytes: guard})
	defer unregister(th)
	close(th.started)
	th.fn()
}

// StackBytes is the size of the thread's stack as the C library reports it
// (pthread_getattr_np): the requested size, rounded up to whole pages.
func (t *Thread) StackBytes() int64 { return t.stack }

// StackRange is the thread's stack, [lo, hi), as pthread_getattr_np and
// pthread_attr_getstack report it: the usable stack, with the thread's
// descriptor and static TLS at its top, without the guard pages below lo.
func (t *Thread) StackRange() (lo, hi uintptr) { return t.lo, t.lo + uintptr(t.stack) }

// GuardBytes is the size of the guard area below the stack
// (pthread_attr_getguardsize: one page by default).
func (t *Thread) GuardBytes() int64 { return t.guard }

// Join waits until fn has returned and the thread has exited. Later calls
// return the first call's result.
func (t *Thread) Join() error {
	t.joinOnce.Do(func() {
		if rc := C.memprobe_thread_join(t.tid); rc != 0 {
			t.joinErr = fmt.Errorf("worker stacks: pthread_join: %w", syscall.Errno(rc))
		}
	})
	return t.joinErr
}
