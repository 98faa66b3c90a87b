// Package outside watches any Linux process from outside, in any language
// and without changing it: the view behind `probe exec` and `probe
// attach`.
//
// It exists because the other instruments watch the reference trainer
// from inside (its ledger, Go's runtime/metrics, its own /proc/self),
// while the programs of the design notes are not ours: a C trainer with 63
// pthreads, a Python one. From outside there is no ledger and no runtime
// to ask, only what the kernel says about a pid, so this package puts the
// probe's kernel-side stages together for another process:
//
//  1. [memprobe/instrument/sampler] samples RSS (anon, file, shmem), VSZ, PSS,
//     swap and threads of the pid every Options.Interval.
//  2. When RSS moves, at most every Options.SmapsEvery (a full smaps
//     walk costs milliseconds on a large process and takes the target's
//     mmap lock while it runs), at new highs 10 % above the highest walk
//     sooner (within a 5 % budget), and at the end while the process
//     still lives, a walk: /proc/PID/smaps, every thread's stack pointer
//     (task/TID/syscall, else stat's kstkesp), status, pagemap;
//     [memprobe/instrument/reconcile] splits RSS and VSZ into named parts
//     (thread stacks, glibc arenas, [heap], files, shared memory, ...), and
//     this package adds what only an outside view needs: GPU driver
//     mappings, anonymous mappings by size class, a Go program's anonymous
//     memory, the process's glibc arena limit and MALLOC_ARENA_MAX.
//  3. At exit (exec), wait4's rusage: the kernel's peak RSS at death,
//     which must agree with the last sampled VmHWM.
//  4. With Options.Sites (exec only), the program's allocation sites
//     ([memprobe/outside/sites], an LD_PRELOAD library) read after it
//     exits, and glibc's arenas split into in use and free but resident
//     (sites.go).
//
// The result is a [memprobe/schema.Result] of kind "process", so the
// readers of `probe train`'s results read it too. This package draws no
// text: [memprobe/report/process] diagnoses the result (Diagnose, with
// Session.TimelineCut), prints it (Render) and draws the live view
// (LiveFrame) from the figures Session.LiveSample and Session.SitesReader
// hand over.
//
// Limits. A process that exits cannot be walked: for exec the end walk is
// the last one taken while it lived. Reading another user's smaps needs
// ptrace read access (the same user, or CAP_SYS_PTRACE); Attach says so
// in one line. Stack pointers of running threads are unknown (the kernel
// prints "running"), so their stacks are found by glibc's shape.
package outside
