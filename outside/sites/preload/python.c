// python.c: the calling thread's CPython frames, read from a hook with
// no GIL, no lock, no allocation and no Python call that could take
// either; and what a code object says of itself (file, qualified name,
// first line, location table), for the probe to name lines with
// (outside/sites/python.go). docs/python-sites.md has the design.
//
// Part of sites.c, which #includes every unit in order: the library is one
// translation unit, so that the fast paths inline what they call as they
// did in one file (scripts/sites-fastpath.sh). Not compiled alone.

// py_layout is where one CPython minor version keeps what is read. The
// numbers were printed by a C program compiled against each version's
// own headers (pyenv's 3.11.7, 3.12.1, 3.13.0: offsetof over
// PyThreadState, _PyCFrame, _PyInterpreterFrame, PyCodeObject,
// PyASCIIObject and PyCompactUnicodeObject with Py_BUILD_CORE; the
// program is in docs/python-sites.md). 3.13's are checked again at run time against the
// interpreter's own _Py_DebugOffsets (py_check_313). The layouts hold
// for every patch release of a minor version (CPython's rule for these
// internals), and only for a release build with the GIL: py_init refuses
// the rest.
struct py_layout {
	const char *name;
	unsigned minor;
	// PyThreadState: interp; the current frame, through tstate->cframe
	// (3.11, 3.12: ts_cframe set) or directly (3.13).
	uint32_t ts_interp, ts_cframe, cframe_frame, ts_frame;
	// _PyInterpreterFrame: f_code (3.13: f_executable), previous,
	// prev_instr (3.13: instr_ptr), owner, and 3.11's is_entry (0: none).
	uint32_t f_code, f_previous, f_instr, f_owner, f_is_entry;
	int owner_cstack; // FRAME_OWNED_BY_CSTACK (-1: 3.11 has none)
	// PyCodeObject
	uint32_t co_filename, co_qualname, co_firstlineno, co_linetable, co_code, co_firsttraceable;
	// PyASCIIObject's size (the data of a compact ASCII string follows
	// it); PyCompactUnicodeObject's utf8_length, utf8 and size.
	uint32_t ascii_size, utf8_length, utf8, compact_size;
};

#ifndef MEMPROBE_PY_PLANT
#define MEMPROBE_PY_PLANT 0 // a test build's shift of co_qualname (TestPythonPlanted)
#endif

static const struct py_layout py_layouts[] = {
    {.name = "3.11", .minor = 11, .ts_interp = 16, .ts_cframe = 56, .cframe_frame = 8, .f_code = 32,
     .f_previous = 48, .f_instr = 56, .f_owner = 69, .f_is_entry = 68, .owner_cstack = -1, .co_filename = 112,
     .co_qualname = 128 + MEMPROBE_PY_PLANT, .co_firstlineno = 72, .co_linetable = 136, .co_code = 184,
     .co_firsttraceable = 168, .ascii_size = 48, .utf8_length = 48, .utf8 = 56, .compact_size = 72},
    {.name = "3.12", .minor = 12, .ts_interp = 16, .ts_cframe = 56, .cframe_frame = 0, .f_code = 0,
     .f_previous = 8, .f_instr = 56, .f_owner = 70, .owner_cstack = 3, .co_filename = 112,
     .co_qualname = 128 + MEMPROBE_PY_PLANT, .co_firstlineno = 68, .co_linetable = 136, .co_code = 192,
     .co_firsttraceable = 176, .ascii_size = 40, .utf8_length = 40, .utf8 = 48, .compact_size = 56},
    {.name = "3.13", .minor = 13, .ts_interp = 16, .ts_frame = 72, .f_code = 0, .f_previous = 8, .f_instr = 56,
     .f_owner = 70, .owner_cstack = 3, .co_filename = 112, .co_qualname = 128 + MEMPROBE_PY_PLANT,
     .co_firstlineno = 68, .co_linetable = 136, .co_code = 200, .co_firsttraceable = 184, .ascii_size = 40,
     .utf8_length = 40, .utf8 = 48, .compact_size = 56},
};

enum {
	PY_MAX_HOPS = 1024,	     // frames walked at most (a cycle in garbage ends here)
	PY_OWNED_BY_GENERATOR = 1, // FRAME_OWNED_BY_GENERATOR, 3.11 to 3.13
	PY_OB_TYPE = 8,		     // PyObject.ob_type
	PY_OB_SIZE = 16,	     // PyVarObject.ob_size: a code object's code units, a bytes' length
	PY_BYTES_SVAL = 32,	     // PyBytesObject.ob_sval
	PY_STR_LENGTH = 16,	     // PyASCIIObject.length
	PY_STR_STATE = 32,	     // PyASCIIObject.state: kind bits 2-4, compact 5, ascii 6
};

static const struct py_layout *py; // NULL: Python frames off
static void *(*py_tstate)(void);   // PyGILState_GetThisThreadState
static int (*py_initialized)(void);
static void *(*py_main)(void); // PyInterpreterState_Main
static uintptr_t py_code_type, py_unicode_type, py_bytes_type;
static char py_why[200]; // why Python frames are off, for the test hook

// py_ptr says p may be an object's address: aligned, in user space.
static inline int py_ptr(uintptr_t p) { return p >= 4096 && p < ((uintptr_t)1 << 47) && (p & 7) == 0; }

static inline uintptr_t py_rd(uintptr_t base, uint32_t off) {
	uintptr_t v;
	memcpy(&v, (const void *)(base + off), sizeof v);
	return v;
}

static inline uint32_t py_rd32(uintptr_t base, uint32_t off) {
	uint32_t v;
	memcpy(&v, (const void *)(base + off), sizeof v);
	return v;
}

// py_off turns Python frames off, saying why in one line on stderr.
__attribute__((format(printf, 1, 2))) static void py_off(const char *format, ...) {
	va_list ap;
	va_start(ap, format);
	vsnprintf(py_why, sizeof py_why, format, ap);
	va_end(ap);
	py = NULL;
	char msg[256];
	int n = snprintf(msg, sizeof msg, "libmemprobe-sites: %s; Python frames off\n", py_why);
	if (n > (int)sizeof msg - 1)
		n = (int)sizeof msg - 1;
	if (n > 0)
		(void)!write(2, msg, (size_t)n);
}

// _Py_DebugOffsets as 3.13 lays it out at the start of _PyRuntime
// (Include/internal/pycore_runtime.h): only the part read here.
struct py_debug_313 {
	char cookie[8];
	uint64_t version, free_threaded;
	uint64_t runtime_state[3], interpreter_state[13];
	struct {
		uint64_t size, prev, next, interp, current_frame, thread_id, native_thread_id, datastack_chunk, status;
	} thread_state;
	struct {
		uint64_t size, previous, executable, instr_ptr, localsplus, owner;
	} frame;
	struct {
		uint64_t size, filename, name, qualname, linetable, firstlineno, argcount, localsplusnames,
		    localspluskinds, co_code_adaptive;
	} code;
	struct {
		uint64_t size, ob_type;
	} pyobject;
	uint64_t type_object[4], tuple_object[3], list_object[3], dict_object[3], float_object[2], long_object[3];
	struct {
		uint64_t size, ob_size, ob_sval;
	} bytes;
	struct {
		uint64_t size, state, length, asciiobject_size;
	} unicode;
};

// py_check_313 compares the offsets used with what the interpreter says
// of itself; 0 where they agree, else Python frames are off.
static int py_check_313(const struct py_layout *l, unsigned long version) {
	const struct py_debug_313 *d = dlsym(RTLD_DEFAULT, "_PyRuntime");
	if (d == NULL) {
		py_off("Python 3.13 without _PyRuntime: its offsets cannot be checked");
		return -1;
	}
	if (memcmp(d->cookie, "xdebugpy", 8) != 0 || d->version != version) {
		py_off("Python 3.13: _PyRuntime does not start with _Py_DebugOffsets (cookie %.8s, version %#llx)",
		       d->cookie, (unsigned long long)d->version);
		return -1;
	}
	if (d->free_threaded) {
		py_off("Python 3.13 free-threaded (3.13t): its layouts are not known here");
		return -1;
	}
	const struct {
		const char *name;
		uint64_t theirs, ours;
	} c[] = {
	    {"thread_state.interp", d->thread_state.interp, l->ts_interp},
	    {"thread_state.current_frame", d->thread_state.current_frame, l->ts_frame},
	    {"interpreter_frame.previous", d->frame.previous, l->f_previous},
	    {"interpreter_frame.executable", d->frame.executable, l->f_code},
	    {"interpreter_frame.instr_ptr", d->frame.instr_ptr, l->f_instr},
	    {"interpreter_frame.owner", d->frame.owner, l->f_owner},
	    {"code_object.filename", d->code.filename, l->co_filename},
	    {"code_object.qualname", d->code.qualname, l->co_qualname},
	    {"code_object.linetable", d->code.linetable, l->co_linetable},
	    {"code_object.firstlineno", d->code.firstlineno, l->co_firstlineno},
	    {"code_object.co_code_adaptive", d->code.co_code_adaptive, l->co_code},
	    {"pyobject.ob_type", d->pyobject.ob_type, PY_OB_TYPE},
	    {"bytes_object.ob_size", d->bytes.ob_size, PY_OB_SIZE},
	    {"bytes_object.ob_sval", d->bytes.ob_sval, PY_BYTES_SVAL},
	    {"unicode_object.state", d->unicode.state, PY_STR_STATE},
	    {"unicode_object.length", d->unicode.length, PY_STR_LENGTH},
	    {"unicode_object.asciiobject_size", d->unicode.asciiobject_size, l->ascii_size},
	};
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
		if (c[i].theirs != c[i].ours) {
			py_off("Python 3.13: _Py_DebugOffsets %s is %llu, this library's %llu", c[i].name,
			       (unsigned long long)c[i].theirs, (unsigned long long)c[i].ours);
			return -1;
		}
	return 0;
}

// py_build_refused names a build whose layouts differ from the release
// build's (NULL: none found): a debug build's reference counting
// (Py_REF_DEBUG, Py_TRACE_REFS) or a free-threaded one (Py_GIL_DISABLED).
static const char *py_build_refused(void) {
	static const char *const marks[][2] = {
	    {"_Py_NegativeRefcount", "a debug build (Py_REF_DEBUG)"},
	    {"_Py_PrintReferences", "a Py_TRACE_REFS build"},
	    {"_Py_DecRefShared", "a free-threaded build"},
	    {"_Py_MergeZeroLocalRefcount", "a free-threaded build"},
	};
	for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++)
		if (dlsym(RTLD_DEFAULT, marks[i][0]) != NULL)
			return marks[i][1];
	return NULL;
}

// py_init decides, once at the library's start and outside any hook,
// whether this process runs a CPython whose frames it can read. A
// process with no Python says nothing; a Python it cannot read says
// what it found, in one line.
static void py_init(void) {
	void *tstate = dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
	if (tstate == NULL)
		return; // not Python (or libpython is dlopened later: not read)
	const unsigned long *ver = dlsym(RTLD_DEFAULT, "Py_Version");
	if (ver == NULL) {
		const char *(*gv)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "Py_GetVersion");
		const char *v = gv != NULL ? gv() : "?";
		py_off("Python %.*s: not 3.11, 3.12 or 3.13", (int)strcspn(v, " "), v);
		return;
	}
	unsigned major = (unsigned)(*ver >> 24), minor = (unsigned)(*ver >> 16) & 0xff;
	const struct py_layout *l = NULL;
	for (size_t i = 0; i < sizeof py_layouts / sizeof py_layouts[0]; i++)
		if (major == 3 && py_layouts[i].minor == minor)
			l = &py_layouts[i];
	if (l == NULL) {
		py_off("Python %u.%u (Py_Version %#lx): not 3.11, 3.12 or 3.13", major, minor, *ver);
		return;
	}
	const char *build = py_build_refused();
	if (build != NULL) {
		py_off("Python %s: %s, whose layouts are not known here", l->name, build);
		return;
	}
	py_tstate = (void *(*)(void))tstate;
	py_initialized = (int (*)(void))dlsym(RTLD_DEFAULT, "Py_IsInitialized");
	py_main = (void *(*)(void))dlsym(RTLD_DEFAULT, "PyInterpreterState_Main");
	py_code_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyCode_Type");
	py_unicode_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyUnicode_Type");
	py_bytes_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyBytes_Type");
	if (!py_initialized || !py_main || !py_code_type || !py_unicode_type || !py_bytes_type) {
		py_off("Python %s without one of Py_IsInitialized, PyInterpreterState_Main, PyCode_Type, "
		       "PyUnicode_Type, PyBytes_Type",
		       l->name);
		return;
	}
	if (l->minor == 13 && py_check_313(l, *ver) != 0)
		return;
	py = l;
}

// py_stack writes the calling thread's Python frames, innermost first:
// each code object's address and its current instruction's offset in
// code units, PY_ENTRY set on the outermost frame of each eval loop
// call. It returns how many (0: no Python on this thread, or frames
// off). It reads only: a pointer that is not plausible (alignment,
// range, a code object's type) ends the walk, and a frame being pushed
// (its instruction before the first traceable one) is left out: a
// shorter stack, never a wrong one.
static int py_stack(uint64_t *code, uint32_t *instr_off, int max) {
	const struct py_layout *l = py;
	// Before Py_Initialize and from finalization on, the thread-state
	// key may not be Python's: nothing is read.
	if (l == NULL || max <= 0 || !py_initialized())
		return 0;
	uintptr_t ts = (uintptr_t)py_tstate();
	if (!py_ptr(ts) || py_rd(ts, l->ts_interp) != (uintptr_t)py_main())
		return 0;
	uintptr_t f;
	if (l->ts_cframe != 0) {
		uintptr_t cf = py_rd(ts, l->ts_cframe);
		if (!py_ptr(cf))
			return 0;
		f = py_rd(cf, l->cframe_frame);
	} else {
		f = py_rd(ts, l->ts_frame);
	}
	int n = 0;
	for (int hops = 0; f != 0 && n < max && hops < PY_MAX_HOPS; hops++, f = py_rd(f, l->f_previous)) {
		if (!py_ptr(f))
			break;
		uint8_t owner = *(const uint8_t *)(f + l->f_owner);
		if ((int)owner == l->owner_cstack) {
			if (n > 0)
				instr_off[n - 1] |= PY_ENTRY; // the frame inside it began this eval call
			continue;
		}
		int entry = l->f_is_entry != 0 && *(const uint8_t *)(f + l->f_is_entry) != 0;
		uintptr_t co = py_rd(f, l->f_code);
		if (!py_ptr(co) || py_rd(co, PY_OB_TYPE) != py_code_type)
			break;
		intptr_t delta = (intptr_t)py_rd(f, l->f_instr) - (intptr_t)(co + l->co_code);
		intptr_t units = (intptr_t)py_rd(co, PY_OB_SIZE);
		if ((delta & 1) != 0 || delta / 2 >= units)
			break;
		if (delta / 2 < (intptr_t)py_rd32(co, l->co_firsttraceable) && owner != PY_OWNED_BY_GENERATOR) {
			if (entry && n > 0)
				instr_off[n - 1] |= PY_ENTRY;
			continue; // being pushed: not yet running
		}
		code[n] = co;
		instr_off[n] = (uint32_t)(delta / 2) | (entry ? PY_ENTRY : 0);
		n++;
	}
	return n;
}

// py_utf8 appends code point c to out (cap bytes) at *len, counting
// what does not fit.
static void py_utf8(uint32_t c, char *out, size_t cap, size_t *len) {
	char b[4];
	size_t n;
	if (c < 0x80) {
		b[0] = (char)c, n = 1;
	} else if (c < 0x800) {
		b[0] = (char)(0xc0 | c >> 6), b[1] = (char)(0x80 | (c & 0x3f)), n = 2;
	} else if (c < 0x10000) {
		b[0] = (char)(0xe0 | c >> 12), b[1] = (char)(0x80 | (c >> 6 & 0x3f)), b[2] = (char)(0x80 | (c & 0x3f));
		n = 3;
	} else {
		b[0] = (char)(0xf0 | c >> 18), b[1] = (char)(0x80 | (c >> 12 & 0x3f));
		b[2] = (char)(0x80 | (c >> 6 & 0x3f)), b[3] = (char)(0x80 | (c & 0x3f)), n = 4;
	}
	for (size_t i = 0; i < n; i++, (*len)++)
		if (*len < cap)
			out[*len] = b[i];
}

// py_str copies str object s as UTF-8 into out (cap bytes) and returns
// its whole length in bytes; -1 where s is not a compact str (code
// objects' names always are).
static ssize_t py_str(uintptr_t s, char *out, size_t cap) {
	const struct py_layout *l = py;
	if (!py_ptr(s) || py_rd(s, PY_OB_TYPE) != py_unicode_type)
		return -1;
	uint32_t state = py_rd32(s, PY_STR_STATE);
	uint32_t kind = state >> 2 & 7;
	size_t n = (size_t)py_rd(s, PY_STR_LENGTH);
	if (!(state & 0x20) || (kind != 1 && kind != 2 && kind != 4) || n > (1u << 30))
		return -1;
	if (state & 0x40) { // compact ASCII: the bytes follow the header
		memcpy(out, (const void *)(s + l->ascii_size), n < cap ? n : cap);
		return (ssize_t)n;
	}
	uintptr_t u8 = py_rd(s, l->utf8);
	if (u8 != 0) {
		size_t u8n = (size_t)py_rd(s, l->utf8_length);
		memcpy(out, (const void *)u8, u8n < cap ? u8n : cap);
		return (ssize_t)u8n;
	}
	size_t len = 0;
	const uint8_t *d = (const uint8_t *)(s + l->compact_size);
	for (size_t i = 0; i < n; i++) {
		uint32_t c = kind == 1 ? d[i] : kind == 2 ? ((const uint16_t *)d)[i] : ((const uint32_t *)d)[i];
		py_utf8(c, out, cap, &len);
	}
	return (ssize_t)len;
}

// py_code_info fills out with code object code's file name, qualified
// name, first line and location table; 0, or -1 where code or one of
// its fields is not what it should be (nothing is then to be trusted).
// Not for a hook's fast path: once per code object.
static int py_code_info(uint64_t code, struct py_code *out) {
	const struct py_layout *l = py;
	uintptr_t co = (uintptr_t)code;
	if (l == NULL || !py_ptr(co) || py_rd(co, PY_OB_TYPE) != py_code_type)
		return -1;
	out->firstline = (int32_t)py_rd32(co, l->co_firstlineno);
	ssize_t f = py_str(py_rd(co, l->co_filename), out->file, out->file_cap);
	ssize_t q = py_str(py_rd(co, l->co_qualname), out->qualname, out->qualname_cap);
	uintptr_t lt = py_rd(co, l->co_linetable);
	if (f < 0 || q < 0 || !py_ptr(lt) || py_rd(lt, PY_OB_TYPE) != py_bytes_type)
		return -1;
	out->file_len = (size_t)f, out->qualname_len = (size_t)q;
	out->lines_len = (size_t)py_rd(lt, PY_OB_SIZE);
	memcpy(out->lines, (const void *)(lt + PY_BYTES_SVAL),
	       out->lines_len < out->lines_cap ? out->lines_len : out->lines_cap);
	return 0;
}

// py_code_key is what tells code object code from another made later at
// its address (the first freed): its address, first line and the
// addresses of its file name, qualified name and location table, mixed.
// A key seen before is a code object already described in the records;
// a new object at a reused address differs in at least one of these
// unless all three of its strings were also made at the old ones' places.
// Four loads, no string read: every sampled frame takes it. 0 where code
// is not a code object (the frame is then left out).
static uint64_t py_code_key(uint64_t code) {
	const struct py_layout *l = py;
	uintptr_t co = (uintptr_t)code;
	if (l == NULL || !py_ptr(co) || py_rd(co, PY_OB_TYPE) != py_code_type)
		return 0;
	uint64_t k = mix(code ^ 0x9e3779b97f4a7c15ULL);
	k = mix(k ^ py_rd32(co, l->co_firstlineno));
	k = mix(k ^ py_rd(co, l->co_filename));
	k = mix(k ^ py_rd(co, l->co_qualname));
	k = mix(k ^ py_rd(co, l->co_linetable));
	return k < 2 ? k + 2 : k;
}

#ifdef MEMPROBE_PY_TEST
// memprobe_py_dump writes, for tests only (a build with
// -DMEMPROBE_PY_TEST: TestPythonFrames), whether Python frames are on
// and the calling thread's frames with their code objects, one line
// each, tab-separated:
//
//	python	on	3.12	(or: python	off	why)
//	frame	code	offset	entry	firstline	file	qualname	linetable-hex
//	frame	code	offset	entry	bad	(py_code_info refused it)
EXPORT int memprobe_py_dump(int out) {
	char line[16384];
	int n = py ? snprintf(line, sizeof line, "python\ton\t%s\n", py->name)
		   : snprintf(line, sizeof line, "python\toff\t%s\n", py_why);
	(void)!write(out, line, (size_t)n);
	uint64_t code[128];
	uint32_t off[128];
	int k = py_stack(code, off, 128);
	for (int i = 0; i < k; i++) {
		char file[512], qual[256];
		uint8_t lines[4096];
		struct py_code c = {.file = file, .file_cap = sizeof file, .qualname = qual, .qualname_cap = sizeof qual,
				    .lines = lines, .lines_cap = sizeof lines};
		n = snprintf(line, sizeof line, "frame\t%#llx\t%u\t%d\t", (unsigned long long)code[i], off[i] & PY_OFF_MASK,
			     (off[i] & PY_ENTRY) != 0);
		if (py_code_info(code[i], &c) != 0 || c.file_len > sizeof file || c.qualname_len > sizeof qual ||
		    c.lines_len > sizeof lines) {
			n += snprintf(line + n, sizeof line - (size_t)n, "bad\n");
		} else {
			n += snprintf(line + n, sizeof line - (size_t)n, "%d\t%.*s\t%.*s\t", c.firstline, (int)c.file_len,
				      file, (int)c.qualname_len, qual);
			for (size_t j = 0; j < c.lines_len && n < (int)sizeof line - 3; j++)
				n += snprintf(line + n, sizeof line - (size_t)n, "%02x", lines[j]);
			line[n++] = '\n';
		}
		(void)!write(out, line, (size_t)n);
	}
	return k;
}

// memprobe_py_bench returns the mean nanoseconds of n py_stack calls on
// the calling thread, for tests only: what Python frames add to a sample.
EXPORT double memprobe_py_bench(int n) {
	uint64_t code[MAX_FRAMES];
	uint32_t off[MAX_FRAMES];
	uint64_t t0 = now_ns();
	volatile int sink = 0;
	for (int i = 0; i < n; i++)
		sink += py_stack(code, off, MAX_FRAMES);
	(void)sink;
	return n > 0 ? (double)(now_ns() - t0) / n : 0;
}
#endif
