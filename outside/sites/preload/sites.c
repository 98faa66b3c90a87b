// libmemprobe-sites: the allocation-site recorder that `probe exec --sites`
// puts in LD_PRELOAD. It wraps the C allocator's entry points and the
// program's own mmap, munmap and mprotect, samples allocations by bytes
// (a Poisson process of mean MEMPROBE_SITES_RATE bytes; 1 records every
// allocation), unwinds the stack of each sampled one (on x86-64 by the
// rules of .eh_frame, which it caches; else libunwind, else libgcc's
// unwinder), and writes binary records to
// MEMPROBE_SITES_DIR/sites.PID.N.bin, one file per process image.
// Everything else (symbols, profiles, the
// peak, the leaks) is done outside, by the probe (outside/sites). The record
// format is described in outside/sites/records.go; both sides change
// together (recordVersion).
//
// Costs: with glibc's allocator and a rate above 1, an allocation that is
// not sampled costs a thread-local decrement and the count of its chunk
// header; a free reads that header (the count, and the mark of a sampled
// block, below) and counts it: about 33 instructions a malloc+free pair,
// no lock and no system call (scripts/sites-fastpath.sh). With another
// allocator, or at rate 1, every call takes the general path: a free
// looks in a filter and a lock-free set of the sampled addresses, or at
// rate 1 is recorded.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <unwind.h>

// The library's units, #included here in the order each needs the ones
// before it (state.h declares the few functions called before they are
// defined):
//
//	common.h     the constants: records, kinds, flags
//	hooks.h      HOOKS, the one list of wrapped functions; resolve
//	state.h      the state the units share: options, file, counts, threads
//	sampling.c   which allocations are sampled; the sampled set, the marks
//	unwind.c     a sample's stack, by .eh_frame's rules, libunwind, libgcc
//	python.c     the thread's CPython frames, and their code objects
//	records.c    the records file, the threads' buffers, the records
//	hooks.c      the wrapped allocator, mmap, munmap and mprotect
//	lifecycle.c  start (init), fork, exec and end
//	signals.c    the signals that end a process; sigaction and signal
//
// One translation unit (make build and sites.Build compile sites.c
// alone): the fast paths inline what they call from the other units, as
// in one file, and keep their instruction count. Each unit's file says
// at its top that it is not compiled alone.
// clang-format off
#include "common.h"
#include "hooks.h"
#include "state.h"
#include "python.h"
#include "sampling.c"
#include "unwind.c"
#include "python.c"
#include "records.c"
#include "hooks.c"
#include "lifecycle.c"
#include "signals.c"
// clang-format on
