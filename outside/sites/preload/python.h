// python.h: the calling thread's CPython frames (3.11, 3.12, 3.13), read
// from inside a hook without the GIL, and what a code object says of
// itself. docs/python-sites.md has the design.
//
// Part of sites.c, which #includes every unit in order: the library is one
// translation unit, so that the fast paths inline what they call as they
// did in one file (scripts/sites-fastpath.sh). Not compiled alone.

// PY_ENTRY is set in py_stack's instr_off of the first frame an eval
// loop call ran (3.11's is_entry; 3.12 and 3.13: the frame inside a
// C-stack shim frame): the Python frames between two such marks are one
// _PyEval_EvalFrameDefault frame of the native stack, innermost first.
#define PY_ENTRY 0x80000000u
#define PY_OFF_MASK 0x7fffffffu

// py_code is a code object's description, copied into the caller's
// buffers: each *_len is the whole length, more than its cap where the
// copy was cut.
struct py_code {
	char *file;
	size_t file_cap, file_len;
	char *qualname;
	size_t qualname_cap, qualname_len;
	uint8_t *lines; // co_linetable, the 3.11+ location table
	size_t lines_cap, lines_len;
	int32_t firstline;
};

static void py_init(void);
__attribute__((unused)) static int py_stack(uint64_t *code, uint32_t *instr_off, int max);
__attribute__((unused)) static int py_code_info(uint64_t code, struct py_code *out);
