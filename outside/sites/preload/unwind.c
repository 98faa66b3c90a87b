// unwind.c: a sampled allocation's stack: by the rules of .eh_frame on
// x86-64 (cached in the thread's buffer), else libunwind, else libgcc's
// unwinder.
//
// Part of sites.c, which #includes every unit in order: the library is one
// translation unit, so that the fast paths inline what they call as they
// did in one file (scripts/sites-fastpath.sh). Not compiled alone.

// ---- stacks -------------------------------------------------------------

struct frames {
	uint64_t pc[MAX_FRAMES];
	int n, skip;
};

static _Unwind_Reason_Code frame(struct _Unwind_Context *ctx, void *arg) {
	struct frames *f = arg;
	if (f->skip > 0) {
		f->skip--;
		return _URC_NO_REASON;
	}
	uintptr_t ip = _Unwind_GetIP(ctx);
	if (ip == 0)
		return _URC_END_OF_STACK;
	f->pc[f->n++] = ip;
	return f->n < MAX_FRAMES ? _URC_NO_REASON : _URC_END_OF_STACK;
}

// ---- stacks by the rules of .eh_frame, cached -----------------------------
//
// On x86-64 the library walks a sample's stack itself: each return
// address's frame rule (where the canonical frame address is, from rsp
// or rbp, and where the return address and rbp are saved) is read once
// from the object's .eh_frame (found by _dl_find_object: no lock, no
// allocation) and kept in the thread's buffer; a walk is then a table
// look and two loads a frame: on stress.c a sample adds 940 instructions
// and 45 L1 misses where with libunwind it adds 1500 and 77 (cachegrind,
// docs/exec.md; in seconds the difference was within the measure). A
// frame whose rule is not of this simple form (a CFA
// by expression, a signal frame, no unwind entry) gives the whole stack
// to libunwind or libgcc's unwinder, as before; MEMPROBE_SITES_UNWIND=
// libunwind or libgcc asks for them always.
#if defined(__x86_64__) && defined(DLFO_STRUCT_HAS_EH_DBASE)
#define CFI_UNWIND 1
enum { DW_RBP = 6, DW_RSP = 7, DW_RA = 16, CFI_STATES = 8 };
static int (*find_object)(void *, struct dl_find_object *);
static _Atomic unsigned rules_gen = 1; // a dlclose makes every thread's rules stale

// A register's rule as the CFA program leaves it: unchanged (RULE_SAME),
// saved at CFA + off (RULE_AT), undefined (the return address of the
// outermost frame), or any other (RULE_OTHER: the walk gives up).
enum { RULE_SAME, RULE_AT, RULE_UNDEF, RULE_OTHER };
struct cfa_row {
	int cfa_reg; // DW_RSP or DW_RBP; anything else gives up
	int64_t cfa_off;
	int rbp, ra; // RULE_*
	int64_t rbp_off, ra_off;
};

static uint64_t uleb(const uint8_t **p, const uint8_t *end) {
	uint64_t v = 0;
	for (int s = 0; *p < end && s < 64; s += 7) {
		uint8_t b = *(*p)++;
		v |= (uint64_t)(b & 0x7f) << s;
		if (!(b & 0x80))
			break;
	}
	return v;
}

static int64_t sleb(const uint8_t **p, const uint8_t *end) {
	int64_t v = 0;
	int s = 0;
	uint8_t b = 0x80;
	while (*p < end && s < 64 && (b & 0x80)) {
		b = *(*p)++;
		v |= (int64_t)(b & 0x7f) << s;
		s += 7;
	}
	if (s < 64 && (b & 0x40))
		v |= -((int64_t)1 << s);
	return v;
}

// read_enc reads a pointer encoded as enc (DW_EH_PE_*): absolute or
// relative to its own place (pcrel), or to base (datarel); 0 where the
// encoding is one this does not read (indirect, textrel, funcrel).
static int read_enc(const uint8_t **p, const uint8_t *end, uint8_t enc, uint64_t base, uint64_t *v) {
	const uint8_t *q = *p;
	uint64_t x;
	if (enc == 0xff)
		return 0;
	switch (enc & 0x0f) {
	case 0x00: case 0x04: case 0x0c:
		if (end - q < 8) return 0;
		memcpy(&x, q, 8), q += 8;
		break;
	case 0x01: x = uleb(&q, end); break;
	case 0x09: x = (uint64_t)sleb(&q, end); break;
	case 0x02: { uint16_t y; if (end - q < 2) return 0; memcpy(&y, q, 2), q += 2; x = y; break; }
	case 0x0a: { int16_t y; if (end - q < 2) return 0; memcpy(&y, q, 2), q += 2; x = (uint64_t)(int64_t)y; break; }
	case 0x03: { uint32_t y; if (end - q < 4) return 0; memcpy(&y, q, 4), q += 4; x = y; break; }
	case 0x0b: { int32_t y; if (end - q < 4) return 0; memcpy(&y, q, 4), q += 4; x = (uint64_t)(int64_t)y; break; }
	default: return 0;
	}
	switch (enc & 0x70) {
	case 0x00: break;
	case 0x10: x += (uint64_t)(uintptr_t)*p; break;
	case 0x30: x += base; break;
	default: return 0;
	}
	*p = q;
	*v = x;
	return 1;
}

// cfa_run runs a CFA program on row r until the row that covers target
// (loc is the address the program starts at); init is the row after the
// CIE's initial instructions (DW_CFA_restore's). 0 where the program
// has an instruction this does not follow for rsp, rbp or the return
// address.
static int cfa_run(const uint8_t *p, const uint8_t *end, uint64_t loc, uint64_t target, uint64_t code_align,
		   int64_t data_align, uint8_t fde_enc, struct cfa_row *r, const struct cfa_row *init) {
	struct cfa_row saved[CFI_STATES];
	int depth = 0;
	while (p < end) {
		uint8_t op = *p++;
		uint64_t reg, delta = 0;
		int64_t off;
		int advance = 0;
		switch (op >> 6) {
		case 1: delta = (op & 0x3f) * code_align, advance = 1; break;
		case 2:
			reg = op & 0x3f, off = (int64_t)uleb(&p, end) * data_align;
			goto at;
		case 3:
			reg = op & 0x3f;
			goto restore;
		}
		if (advance)
			goto advance;
		switch (op) {
		case 0x00: continue; // nop
		case 0x01: { // set_loc
			uint64_t v;
			if (!read_enc(&p, end, fde_enc, 0, &v))
				return 0;
			if (target < v)
				return 1;
			loc = v;
			continue;
		}
		case 0x02: if (p >= end) return 0; delta = *p++ * code_align; goto advance;
		case 0x03: { uint16_t v; if (end - p < 2) return 0; memcpy(&v, p, 2), p += 2; delta = v * code_align; goto advance; }
		case 0x04: { uint32_t v; if (end - p < 4) return 0; memcpy(&v, p, 4), p += 4; delta = v * code_align; goto advance; }
		case 0x05: reg = uleb(&p, end), off = (int64_t)uleb(&p, end) * data_align; goto at;  // offset_extended
		case 0x11: reg = uleb(&p, end), off = sleb(&p, end) * data_align; goto at;           // offset_extended_sf
		case 0x2f: reg = uleb(&p, end), off = -(int64_t)uleb(&p, end) * data_align; goto at; // GNU_negative_offset_extended
		case 0x06: reg = uleb(&p, end); goto restore;                                        // restore_extended
		case 0x07: reg = uleb(&p, end); // undefined
			if (reg == DW_RA) r->ra = RULE_UNDEF;
			else if (reg == DW_RBP) r->rbp = RULE_UNDEF;
			continue;
		case 0x08: reg = uleb(&p, end); // same_value
			if (reg == DW_RA) r->ra = RULE_OTHER;
			else if (reg == DW_RBP) r->rbp = RULE_SAME;
			continue;
		case 0x09: reg = uleb(&p, end), (void)uleb(&p, end); goto other; // register
		case 0x0a: if (depth == CFI_STATES) return 0; saved[depth++] = *r; continue; // remember_state
		case 0x0b: if (depth == 0) return 0; *r = saved[--depth]; continue; // restore_state: the CFA's rule too
		case 0x0c: r->cfa_reg = (int)uleb(&p, end), r->cfa_off = (int64_t)uleb(&p, end); continue; // def_cfa
		case 0x12: r->cfa_reg = (int)uleb(&p, end), r->cfa_off = sleb(&p, end) * data_align; continue; // def_cfa_sf
		case 0x0d: r->cfa_reg = (int)uleb(&p, end); continue;                                  // def_cfa_register
		case 0x0e: r->cfa_off = (int64_t)uleb(&p, end); continue;                              // def_cfa_offset
		case 0x13: r->cfa_off = sleb(&p, end) * data_align; continue;                          // def_cfa_offset_sf
		case 0x0f: return 0;                                                                    // def_cfa_expression
		case 0x10: case 0x16: { // expression, val_expression
			reg = uleb(&p, end);
			uint64_t n = uleb(&p, end);
			if ((uint64_t)(end - p) < n) return 0;
			p += n;
			goto other;
		}
		case 0x14: reg = uleb(&p, end), (void)uleb(&p, end); goto other; // val_offset
		case 0x15: reg = uleb(&p, end), (void)sleb(&p, end); goto other; // val_offset_sf
		case 0x2e: (void)uleb(&p, end); continue;                         // GNU_args_size
		default: return 0;
		}
	advance:
		if (target < loc + delta)
			return 1;
		loc += delta;
		continue;
	at:
		if (reg == DW_RA) r->ra = RULE_AT, r->ra_off = off;
		else if (reg == DW_RBP) r->rbp = RULE_AT, r->rbp_off = off;
		continue;
	restore:
		if (reg == DW_RA) r->ra = init->ra, r->ra_off = init->ra_off;
		else if (reg == DW_RBP) r->rbp = init->rbp, r->rbp_off = init->rbp_off;
		continue;
	other:
		if (reg == DW_RA || reg == DW_RBP || reg == DW_RSP)
			return 0;
		continue;
	}
	return 1;
}

// cfi_rule finds the frame rule at pc (a return address less 1, or the
// walk's first pc): 0 where there is none of the simple form.
static int cfi_rule(uint64_t pc, struct rule *out) {
	struct dl_find_object fo;
	if (find_object((void *)(uintptr_t)pc, &fo) != 0 || fo.dlfo_eh_frame == NULL)
		return 0;
	// .eh_frame_hdr: version 1, its encodings, and the sorted table of
	// (function start, FDE) as 32-bit offsets from the header, which
	// every linker writes.
	const uint8_t *h = fo.dlfo_eh_frame, *q = h + 4;
	if (h[0] != 1 || h[3] != 0x3b)
		return 0;
	uint64_t v, count;
	const uint8_t *hend = h + 64; // the header's fixed part, before the table
	if (!read_enc(&q, hend, h[1], (uint64_t)(uintptr_t)h, &v) || !read_enc(&q, hend, h[2], (uint64_t)(uintptr_t)h, &count) || count == 0)
		return 0;
	const int32_t *tab = (const int32_t *)q;
	int64_t rel = (int64_t)(pc - (uint64_t)(uintptr_t)h);
	if (rel < tab[0])
		return 0;
	uint64_t lo = 0, hi = count; // the last entry whose start is at or below pc
	while (hi - lo > 1) {
		uint64_t m = lo + (hi - lo) / 2;
		if (tab[2 * m] <= rel)
			lo = m;
		else
			hi = m;
	}
	const uint8_t *fde = h + tab[2 * lo + 1];
	uint32_t len, cie_off;
	memcpy(&len, fde, 4);
	if (len == 0 || len == 0xffffffffu)
		return 0;
	const uint8_t *fend = fde + 4 + len;
	memcpy(&cie_off, fde + 4, 4);
	const uint8_t *cie = fde + 4 - cie_off;
	uint32_t clen;
	memcpy(&clen, cie, 4);
	if (clen == 0 || clen == 0xffffffffu)
		return 0;
	const uint8_t *cend = cie + 4 + clen, *c = cie + 8;
	uint8_t version = *c++;
	const char *aug = (const char *)c;
	size_t alen = strnlen(aug, (size_t)(cend - c));
	c += alen + 1;
	if (version != 1 && version != 3)
		return 0;
	uint64_t code_align = uleb(&c, cend);
	int64_t data_align = sleb(&c, cend);
	uint64_t ra_reg = version == 1 ? *c++ : uleb(&c, cend);
	uint8_t fde_enc = 0;
	if (ra_reg != DW_RA)
		return 0;
	if (aug[0] == 'z') {
		uint64_t n = uleb(&c, cend);
		const uint8_t *a = c, *aend = c + n;
		for (const char *s = aug + 1; *s; s++) {
			switch (*s) {
			case 'R': fde_enc = *a++; break;
			case 'L': a++; break;
			case 'P': { uint8_t e = *a++; uint64_t x; if (!read_enc(&a, aend, e & 0x7f, 0, &x)) return 0; break; }
			default: return 0; // 'S' (a signal frame) and the rest
			}
		}
		c = aend;
	} else if (aug[0] != '\0') {
		return 0;
	}
	// The FDE: the function's start and length, its augmentation data
	// (skipped), its program.
	const uint8_t *f = fde + 8;
	uint64_t start, range;
	if (!read_enc(&f, fend, fde_enc, 0, &start) || !read_enc(&f, fend, fde_enc & 0x0f, 0, &range))
		return 0;
	if (pc < start || pc - start >= range)
		return 0;
	if (aug[0] == 'z') {
		uint64_t n = uleb(&f, fend);
		f += n;
	}
	struct cfa_row r = {.cfa_reg = -1, .rbp = RULE_SAME, .ra = RULE_OTHER}, init;
	if (!cfa_run(c, cend, start, UINT64_MAX, code_align, data_align, fde_enc, &r, &r))
		return 0;
	init = r;
	if (!cfa_run(f, fend, start, pc, code_align, data_align, fde_enc, &r, &init))
		return 0;
	if ((r.cfa_reg != DW_RSP && r.cfa_reg != DW_RBP) || r.cfa_off < 0 || r.cfa_off > INT32_MAX ||
	    (r.ra != RULE_AT && r.ra != RULE_UNDEF) || (r.rbp != RULE_AT && r.rbp != RULE_SAME && r.rbp != RULE_UNDEF) ||
	    r.ra_off < INT16_MIN || r.ra_off > INT16_MAX || r.rbp_off < INT16_MIN || r.rbp_off > INT16_MAX)
		return 0;
	out->cfa_off = (int32_t)r.cfa_off;
	out->ra_off = (int16_t)r.ra_off;
	out->rbp_off = r.rbp == RULE_AT ? (int16_t)r.rbp_off : 0;
	out->flags = (r.cfa_reg == DW_RBP ? RULE_CFA_RBP : 0) | (r.ra == RULE_UNDEF ? RULE_LAST : 0) | RULE_OK;
	return 1;
}

// cfi_backtrace writes the return addresses of the caller's stack to pc
// (its own caller's first), at most max; -1 where a frame's rule is not
// one it follows (the caller unwinds another way).
__attribute__((noinline)) static int cfi_backtrace(struct tbuf *b, uint64_t *pc, int max) {
	unsigned gen = atomic_load_explicit(&rules_gen, memory_order_acquire);
	if (UNLIKELY(b->rules_gen != gen)) {
		memset(b->rules, 0, sizeof b->rules);
		b->rules_gen = gen;
	}
	uint64_t ip, sp, bp;
	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2" : "=r"(ip), "=r"(sp), "=r"(bp));
	int n = -1; // this function's own frame is not written
	for (uint64_t look = ip; n < max;) {
		struct rule *r = &b->rules[(look ^ (look >> 9)) & (RULES - 1)];
		if (r->ip != look) {
			struct rule x = {0};
			if (!cfi_rule(look, &x))
				x.flags = 0; // kept: the next look at this pc gives up at once
			x.ip = look;
			*r = x;
		}
		if (!(r->flags & RULE_OK))
			return -1;
		uint64_t cfa = (r->flags & RULE_CFA_RBP ? bp : sp) + (uint64_t)(int64_t)r->cfa_off;
		if (r->flags & RULE_LAST)
			return n < 0 ? 0 : n;
		if (cfa <= sp || cfa - sp > (1u << 30))
			return -1; // not a frame of a stack: not ours to follow
		uint64_t ra = *(const uint64_t *)(uintptr_t)(cfa + (uint64_t)(int64_t)r->ra_off);
		if (r->rbp_off != 0)
			bp = *(const uint64_t *)(uintptr_t)(cfa + (uint64_t)(int64_t)r->rbp_off);
		sp = cfa;
		if (ra == 0)
			break;
		if (n >= 0)
			pc[n] = ra;
		n++;
		look = ra - 1;
	}
	return n < 0 ? 0 : n;
}
#endif

// backtrace writes the stack of record_alloc's caller to f: by the
// rules of .eh_frame, else libunwind's unw_backtrace, else libgcc's
// _Unwind_Backtrace. Inlined: the frame each skips is record_alloc's.
static inline __attribute__((always_inline)) void backtrace(struct tbuf *b, struct frames *f) {
	f->n = 0;
	f->skip = 1;
#ifdef CFI_UNWIND
	if (unwinder <= UNWIND_CFI_ONLY && find_object != NULL && (f->n = cfi_backtrace(b, f->pc, MAX_FRAMES)) >= 0)
		return;
	f->n = 0;
	if (unwinder == UNWIND_CFI_ONLY)
		return;
#else
	(void)b;
#endif
	if (unw_bt != NULL) {
		uint64_t pc[MAX_FRAMES + 1];
		int n = unw_bt((void **)pc, MAX_FRAMES + 1);
		for (int i = 1; i < n; i++)
			f->pc[f->n++] = pc[i];
	} else {
		_Unwind_Backtrace(frame, f);
	}
}
