// hooks.h: the functions the library wraps, listed once, and their
// resolution.
//
// Part of sites.c, which #includes every unit in order: the library is one
// translation unit, so that the fast paths inline what they call as they
// did in one file (scripts/sites-fastpath.sh). Not compiled alone.

// HOOKS lists each function whose next definition the library calls (the
// next object's in the lookup order, RTLD_NEXT: the C library's, or an
// allocator the program preloads after this library), each as X(name,
// return type, parameter types). From the list come real_NAME, the
// pointer to that definition; resolve, which looks every one up at once;
// NEED(NAME), a wrapper's guard where it may run before resolve; and a
// check, at compile time, that each entry's type is the one the system's
// headers declare (heaptrack's HOOK and memray's list do the same in
// C++). The functions wrapped with no next definition of their own to
// call (mmap64, bsd_signal, free_sized, free_aligned_sized, the execl
// family) call another wrapper, and are not listed.
#define HOOKS(X)                                                                                                       \
	X(malloc, void *, (size_t))                                                                                    \
	X(calloc, void *, (size_t, size_t))                                                                            \
	X(realloc, void *, (void *, size_t))                                                                           \
	X(free, void, (void *))                                                                                        \
	X(posix_memalign, int, (void **, size_t, size_t))                                                              \
	X(aligned_alloc, void *, (size_t, size_t))                                                                     \
	X(memalign, void *, (size_t, size_t))                                                                          \
	X(valloc, void *, (size_t))                                                                                    \
	X(pvalloc, void *, (size_t))                                                                                   \
	X(reallocarray, void *, (void *, size_t, size_t))                                                              \
	X(malloc_usable_size, size_t, (void *))                                                                        \
	X(mmap, void *, (void *, size_t, int, int, int, off_t))                                                        \
	X(munmap, int, (void *, size_t))                                                                               \
	X(mprotect, int, (void *, size_t, int))                                                                        \
	X(dlopen, void *, (const char *, int))                                                                         \
	X(dlclose, int, (void *))                                                                                      \
	X(_exit, void, (int))                                                                                          \
	X(_Exit, void, (int))                                                                                          \
	X(sigaction, int, (int, const struct sigaction *, struct sigaction *))                                         \
	X(signal, sighandler_t, (int, sighandler_t))                                                                   \
	X(sysv_signal, sighandler_t, (int, sighandler_t))                                                              \
	X(execve, int, (const char *, char *const[], char *const[]))                                                   \
	X(execv, int, (const char *, char *const[]))                                                                   \
	X(execvp, int, (const char *, char *const[]))                                                                  \
	X(execvpe, int, (const char *, char *const[], char *const[]))                                                  \
	X(fexecve, int, (int, char *const[], char *const[]))

// The next definitions: NULL until resolve, and where the next object
// has none.
#define HOOK_POINTER(name, ret, params) static ret(*real_##name) params;
HOOKS(HOOK_POINTER)
#undef HOOK_POINTER

// hook_type_NAME returns NAME, as the system's headers declare it, as
// the entry's pointer type: a mismatch is an error (never called, never
// emitted).
#pragma GCC diagnostic push
#pragma GCC diagnostic error "-Wincompatible-pointer-types"
#define HOOK_TYPE(name, ret, params)                                                                                   \
	static inline ret(*hook_type_##name(void)) params { return name; }
HOOKS(HOOK_TYPE)
#pragma GCC diagnostic pop
#undef HOOK_TYPE

// dlsym may allocate before the functions are known: those calls are
// served from boot, a bump buffer whose blocks are never freed. The word
// before each has bit 3 set, as a marked block's has (8: a size of 0):
// free's fast path sends them to free_marked, which knows them.
static char boot[BOOT_BYTES] __attribute__((aligned(64)));
static size_t boot_used;
static int resolving;
// count says how an allocation's usable size is read: COUNT_HEADER from
// glibc's chunk header (real_malloc is glibc's), COUNT_CALL by
// malloc_usable_size, COUNT_NONE where the allocator has neither.
enum { COUNT_NONE, COUNT_HEADER, COUNT_CALL };
static int count;

// resolve looks up every hook's next definition, and how the
// allocator's blocks are counted. _exit and _Exit never resolve on
// their own (end_now): a vfork child shares its parent's memory, and
// dlsym may allocate.
static void resolve(void) {
	resolving = 1;
#define HOOK_RESOLVE(name, ret, params) real_##name = (ret(*) params)dlsym(RTLD_NEXT, #name);
	HOOKS(HOOK_RESOLVE)
#undef HOOK_RESOLVE
	Dl_info info;
	if (real_malloc && dladdr((void *)real_malloc, &info) && info.dli_fname && strstr(info.dli_fname, "/libc.so"))
		count = COUNT_HEADER;
	else if (real_malloc_usable_size != NULL)
		count = COUNT_CALL;
	resolving = 0;
}

// NEED(name) resolves the hooks where name's is not known yet: the guard
// of a wrapper the program may call first. NEED_BOOT(name, served) is
// the allocator's: a call made while resolve runs (by dlsym) returns
// served, from boot.
#define NEED(name)                                                                                                     \
	do {                                                                                                           \
		if (UNLIKELY(!real_##name))                                                                            \
			resolve();                                                                                     \
	} while (0)
#define NEED_BOOT(name, served)                                                                                        \
	do {                                                                                                           \
		if (UNLIKELY(!real_##name)) {                                                                          \
			if (resolving)                                                                                 \
				return served;                                                                         \
			resolve();                                                                                     \
		}                                                                                                      \
	} while (0)

static void *boot_alloc(size_t n) {
	if (n > sizeof boot)
		return NULL;
	n = ((n + 15) & ~(size_t)15) + 16;
	if (boot_used + n > sizeof boot)
		return NULL;
	char *p = boot + boot_used + 16;
	((size_t *)p)[-1] = 8;
	boot_used += n;
	return p;
}

static inline int in_boot(void *p) { return (uintptr_t)p - (uintptr_t)boot < sizeof boot; }
