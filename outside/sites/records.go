package sites

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// The record file, as preload/sites.c writes it (little-endian, packed):
//
//	header  "MPSITES\n" u32 version, u32 pid, u32 ppid, u32 0, u64 rate, u64 start (CLOCK_MONOTONIC ns)
//	'S'     u8 n, u64 hash, n × u64 pc          a stack, before its first use
//	'Y'     as 'S', then u8 k, k × (u64 code key, u32 instruction offset
//	        | PY_ENTRY bit 31): a stack with the thread's Python frames,
//	        innermost first (docs/python-sites.md)
//	'C'     u64 code key, u64 address, i32 first line, u32 file length,
//	        u32 qualified name length, u32 location table length, then
//	        the file name, the qualified name (UTF-8) and co_linetable: a
//	        code object, before the first stack that names its key (again
//	        after the thread's cache of keys forgot it). The key mixes the
//	        object's address, first line and its strings' and table's
//	        addresses: a code object made where a freed one was gets a
//	        key of its own.
//	'A'     u8 kind, u64 seq, u64 t_ns, u64 addr, u64 size, u64 stack hash,
//	        i64 count (the count of every block in use, as published then),
//	        u64 usable (the block's usable size)
//	'F'     u8 flags, u64 seq, u64 t_ns, u64 addr  (every free at rate 1;
//	        else the frees of sampled blocks)
//	        (kind: 0 heap, 1 mmap, 2 glibc's mapped chunk, 3 a PROT_NONE
//	        mmap, 4 and 5 an mprotect to access and to none, every one)
//	'U'     u8 flags, u64 seq, u64 t_ns, u64 addr, u64 len  every munmap
//	        of the program's, at any rate, and every MAP_FIXED mmap not
//	        recorded as an 'A' (it replaced what was there)
//	'T'     u64 allocs, u64 bytes               a thread's counts since its last 'T'
//	'M'     u64 len, len bytes of /proc/self/maps
//	'P'     i64 peak, u64 seq, u64 t_ns, i64 end  the count of every block in use by
//	        its usable size: its peak (when), and its value at the end
//	'E'     u8 how, u64 seq, u64 t_ns          the image ended: exit (0), execve (1) or
//	        a signal (2; 0x82 where that cut records: cutNote)
//
// Each thread writes whole records in chunks, so the file is ordered per
// thread, not globally: seq orders the events of one image.
const recordVersion = 5

const headerLen = 40

// Kinds of an allocation.
const (
	kindHeap  = 0 // a block of the C allocator, in its arenas
	kindMmap  = 1 // the program's own anonymous mmap
	kindChunk = 2 // a block glibc served with a mapping of its own
	// kindReserve is a mapping of the program's with no access
	// (PROT_NONE): address space, not memory. It is no allocation and
	// holds nothing in use; pages made accessible in it later are
	// resident there, which the unexplained join tells by its site.
	kindReserve = 3
	// kindProtect and kindUnprotect are the program's mprotect calls,
	// every one: to access (what of a reservation it covers is committed,
	// as V8 commits its heap; elsewhere a change of access, nothing more)
	// and to none (back to a reservation).
	kindProtect   = 4
	kindUnprotect = 5
)

// mappingKind says whether an allocation of kind k is a mapping of the
// program's: a piece of address space that munmap cuts, which ends what
// it covers.
func mappingKind(k uint8) bool { return k == kindMmap || k == kindReserve || k == kindUnprotect }

// reserveKind says whether a mapping of kind k is address space only.
func reserveKind(k uint8) bool { return k == kindReserve || k == kindUnprotect }

// heapKind says whether an allocation of kind k is a block of the C
// allocator.
func heapKind(k uint8) bool { return k == kindHeap || k == kindChunk }

// weightOf is what the allocation e stands for: weight's scaling of a
// sampled one; itself for an mprotect, every one of which is recorded.
func (im *image) weightOf(e *event) (objects, bytes float64) {
	if e.kind == kindProtect || e.kind == kindUnprotect {
		return 1, float64(e.size)
	}
	return weight(e.size, im.rate)
}

// Flags of a free.
const (
	flagTemporary = 1 // freed by its thread before it allocated again
	flagMunmap    = 2
)

// event is one allocation or free of an image.
type event struct {
	seq    uint64
	tNs    uint64
	addr   uint64
	size   uint64 // 0 for a free; a munmap's length
	stack  uint64 // the stack's hash; allocations only
	count  int64  // the library's count of the bytes in use; allocations only
	usable uint64 // the block's usable size; allocations only
	free   bool
	kind   uint8
	flags  uint8
}

// image is one file: the records of one process image (a pid between its
// start or fork and its exit or execve).
type image struct {
	path      string
	pid, ppid int
	// n is the image's number within its pid: 0, then 1 after an execve.
	n    int
	rate uint64
	// startNs is when the image started (CLOCK_MONOTONIC): its events'
	// times count from it.
	startNs uint64
	stacks  map[uint64][]uint64
	// pyStacks are the Python frames of the stacks that have them (by
	// the stack's hash), and codes the code objects they name (by key).
	pyStacks map[uint64][]pyRef
	codes    map[uint64]*PyCode
	// events are the image's allocations and frees where they are in
	// memory (made up by tests, read by LiveReader); an image read from
	// its file has none there: runs says where they are in it, and each
	// streams them.
	events  []event
	runs    []run
	nEvents int64 // in the file
	// maps are the /proc/self/maps texts written (at dlclose, exec and
	// exit), oldest first.
	maps []string
	// allocs and allocBytes are every allocation the library counted,
	// sampled or not, and the bytes asked for.
	allocs, allocBytes uint64
	// counted says the image wrote its count ('P'): countPeak bytes at
	// countSeq (countNs), countEnd at the end.
	counted           bool
	countPeak         int64
	countSeq, countNs uint64
	countEnd          int64
	ended             bool
	endHow            uint8
	endNs             uint64
	// goRuntime are the stacks of a Go program's image that pass through
	// its runtime (set by the analysis before the replay): the mappings
	// they make are the Go heap's and stacks' address space, which the
	// replay leaves out.
	goRuntime map[uint64]bool
	// torn is set when the file ends inside a record, or holds one that
	// cannot be read (a thread that wrote while the process exited).
	torn string
}

// readDir reads every record file of dir, sorted by pid and image number.
func readDir(dir string) ([]*image, error) {
	names, err := filepath.Glob(filepath.Join(dir, "sites.*.bin"))
	if err != nil {
		return nil, err
	}
	var out []*image
	for _, name := range names {
		im, err := readFile(name)
		if err != nil {
			return nil, err
		}
		out = append(out, im)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].pid != out[j].pid {
			return out[i].pid < out[j].pid
		}
		return out[i].n < out[j].n
	})
	return out, nil
}

// endCut is added to an end record's how (2, a signal) where the end cut
// records (cutNote).
const endCut = 0x80

// cutNote is an image's torn where its end record says it is cut: a
// signal ended the process while a thread was in the middle of a record
// (that record, and any the thread had not yet written, are missing),
// or while the records could not be written.
const cutNote = "a signal ended the process in the middle of a record: its last records are cut"

// readFile reads one record file: everything but its events, which stay
// in the file (image.each streams them in seq order), and where each run
// of events in seq order starts and ends. A file cut short or with a
// record it cannot read keeps what came before (torn says what).
func readFile(path string) (*image, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	var h [headerLen]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, fmt.Errorf("reading %s: no header: %v", path, err)
	}
	im, err := parseHeader(path, h[:])
	if err != nil {
		return nil, err
	}
	im.runs = []run{}
	d := decoder{r: r}
	var last uint64
	for {
		at := headerLen + d.n
		err := d.next(im)
		if err == nil && len(im.events) > 0 {
			e := &im.events[0]
			if len(im.runs) == 0 || e.seq < last {
				im.runs = append(im.runs, run{off: at, first: e.seq})
			}
			im.runs[len(im.runs)-1].end = headerLen + d.n
			last = e.seq
			im.nEvents++
			im.events = im.events[:0]
		}
		if err == io.EOF {
			break
		}
		var rerr readError
		if errors.As(err, &rerr) {
			return nil, fmt.Errorf("reading %s: %w", path, rerr.err)
		}
		if err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				err = errors.New("the file ends inside a record")
			}
			im.torn = err.Error()
			break
		}
	}
	im.events = nil
	return im, nil
}

// run is a stretch of a record file whose events are in seq order: a
// thread's buffer, or several written one after another. Each thread's
// records are in order, so a file is a few runs per buffer written.
type run struct {
	off, end int64 // in the file: the first event's record, the end of the last
	first    uint64
}

// each calls f with each of im's events in seq order: those in
// im.events (sorted there), or, for an image read from its file, a merge
// of the file's runs, read again, each from its place, with a heap of
// cursors (a run joins the merge when the merge reaches its first seq,
// so only the runs that overlap in time are open at once). It holds no
// event beyond the cursors'. The error is the file's, read again.
func (im *image) each(f func(e *event)) error {
	if im.runs == nil {
		orderBySeq(im.events)
		for i := range im.events {
			f(&im.events[i])
		}
		return nil
	}
	file, err := os.Open(im.path)
	if err != nil {
		return err
	}
	defer file.Close()
	order := make([]int, len(im.runs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return im.runs[order[i]].first < im.runs[order[j]].first })
	var h cursorHeap
	var free []*cursor
	for next := 0; ; {
		for next < len(order) && (len(h) == 0 || im.runs[order[next]].first <= h[0].e.seq) {
			var c *cursor
			if n := len(free); n > 0 {
				c, free = free[n-1], free[:n-1]
			} else {
				c = &cursor{br: bufio.NewReaderSize(nil, 32<<10), scratch: &image{stacks: map[uint64][]uint64{}}}
			}
			ru := im.runs[order[next]]
			next++
			c.br.Reset(io.NewSectionReader(file, ru.off, ru.end-ru.off))
			c.d = decoder{r: c.br}
			if ok, err := c.advance(); err != nil {
				return fmt.Errorf("reading %s again: %w", im.path, err)
			} else if ok {
				h.push(c)
			}
		}
		if len(h) == 0 {
			return nil
		}
		c := h[0]
		f(&c.e)
		ok, err := c.advance()
		if err != nil {
			return fmt.Errorf("reading %s again: %w", im.path, err)
		}
		if ok {
			h.fix0()
		} else {
			free = append(free, h.pop0())
		}
	}
}

// cursor reads one run's events.
type cursor struct {
	br      *bufio.Reader
	d       decoder
	scratch *image // what the run's other records decode into, dropped
	e       event  // the current event
}

// advance reads the run's next event into c.e: false at the run's end.
func (c *cursor) advance() (bool, error) {
	for {
		err := c.d.next(c.scratch)
		if len(c.scratch.stacks) > 0 {
			clear(c.scratch.stacks)
		}
		c.scratch.pyStacks, c.scratch.codes = nil, nil
		c.scratch.maps = nil
		if err == nil && len(c.scratch.events) > 0 {
			c.e = c.scratch.events[0]
			c.scratch.events = c.scratch.events[:0]
			return true, nil
		}
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, err
		}
	}
}

// cursorHeap is a min-heap of cursors by their current event's seq.
type cursorHeap []*cursor

func (h *cursorHeap) push(c *cursor) {
	*h = append(*h, c)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if s[p].e.seq <= s[i].e.seq {
			break
		}
		s[p], s[i] = s[i], s[p]
		i = p
	}
}

func (h *cursorHeap) pop0() *cursor {
	s := *h
	c := s[0]
	s[0] = s[len(s)-1]
	*h = s[:len(s)-1]
	if len(*h) > 0 {
		h.fix0()
	}
	return c
}

// fix0 moves the first cursor down to its place.
func (h cursorHeap) fix0() {
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < len(h) && h[l].e.seq < h[m].e.seq {
			m = l
		}
		if l+1 < len(h) && h[l+1].e.seq < h[m].e.seq {
			m = l + 1
		}
		if m == i {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// parseHeader checks a file's header (headerLen bytes) and makes its
// image, named after path (sites.PID.N.bin).
func parseHeader(path string, h []byte) (*image, error) {
	if string(h[:8]) != "MPSITES\n" {
		return nil, fmt.Errorf("reading %s: not a memprobe sites record file", path)
	}
	le := binary.LittleEndian
	if v := le.Uint32(h[8:]); v != recordVersion {
		return nil, fmt.Errorf("reading %s: record version %d, this probe reads %d (the library and the probe come from different builds)", path, v, recordVersion)
	}
	// The rate the library used: the one place it is read back
	// (RecordOptions), 1 to the largest int64 as the library takes it.
	rate := le.Uint64(h[24:])
	if rate < 1 || rate > math.MaxInt64 {
		return nil, fmt.Errorf("reading %s: rate %d in the header: the library records at 1 to %d", path, rate, int64(math.MaxInt64))
	}
	im := &image{path: path, pid: int(le.Uint32(h[12:])), ppid: int(le.Uint32(h[16:])), rate: rate, startNs: le.Uint64(h[32:]), stacks: map[uint64][]uint64{}}
	base := strings.TrimSuffix(filepath.Base(path), ".bin")
	if i := strings.LastIndexByte(base, '.'); i >= 0 {
		im.n, _ = strconv.Atoi(base[i+1:])
	}
	return im, nil
}

// readError is an error of the reader under a decoder, not of the
// records.
type readError struct{ err error }

func (e readError) Error() string { return e.err.Error() }

// decoder reads the records after a file's header, one at a time, into
// an image: the whole-file reader and the live one (LiveReader) share it.
type decoder struct {
	r *bufio.Reader
	// n is the bytes of the whole records read so far.
	n   int64
	buf [64 * 8]byte
}

// next reads one record into im: a stack into im.stacks, an allocation
// or a free appended to im.events, the rest into im's fields. It returns
// io.EOF where no record starts (the end), an error wrapping
// io.ErrUnexpectedEOF where the data ends inside one (what was read of
// it is then not counted in n), a readError where the reader failed,
// another error for a record it cannot read.
func (d *decoder) next(im *image) error {
	le := binary.LittleEndian
	r := d.r
	t, err := r.ReadByte()
	if err == io.EOF {
		return io.EOF
	}
	if err != nil {
		return readError{err}
	}
	n := int64(1)
	read := func(k int) ([]byte, error) {
		_, err := io.ReadFull(r, d.buf[:k])
		n += int64(k)
		return d.buf[:k], err
	}
	var b []byte
	switch t {
	case 'S', 'Y':
		if b, err = read(9); err != nil {
			break
		}
		k, hash := int(b[0]), le.Uint64(b[1:])
		if b, err = read(8 * k); err != nil {
			break
		}
		pcs := make([]uint64, k)
		for i := range pcs {
			pcs[i] = le.Uint64(b[8*i:])
		}
		im.stacks[hash] = pcs
		if t == 'Y' {
			err = d.pyStack(im, hash, read)
		}
	case 'C':
		var k int64
		k, err = d.code(im, read)
		n += k
	case 'A':
		if b, err = read(57); err != nil {
			break
		}
		im.events = append(im.events, event{kind: b[0], seq: le.Uint64(b[1:]), tNs: le.Uint64(b[9:]),
			addr: le.Uint64(b[17:]), size: le.Uint64(b[25:]), stack: le.Uint64(b[33:]), count: int64(le.Uint64(b[41:])), usable: le.Uint64(b[49:])})
	case 'F':
		if b, err = read(25); err != nil {
			break
		}
		im.events = append(im.events, event{free: true, flags: b[0], seq: le.Uint64(b[1:]), tNs: le.Uint64(b[9:]), addr: le.Uint64(b[17:])})
	case 'U':
		if b, err = read(33); err != nil {
			break
		}
		im.events = append(im.events, event{free: true, flags: b[0] | flagMunmap, seq: le.Uint64(b[1:]), tNs: le.Uint64(b[9:]), addr: le.Uint64(b[17:]), size: le.Uint64(b[25:])})
	case 'T':
		if b, err = read(16); err != nil {
			break
		}
		im.allocs += le.Uint64(b)
		im.allocBytes += le.Uint64(b[8:])
	case 'M':
		if b, err = read(8); err != nil {
			break
		}
		k := le.Uint64(b)
		if k > 64<<20 {
			err = fmt.Errorf("a maps record of %d bytes", k)
			break
		}
		text := make([]byte, k)
		if _, err = io.ReadFull(r, text); err == nil {
			n += int64(k)
			im.maps = append(im.maps, string(text))
		}
	case 'P':
		if b, err = read(32); err != nil {
			break
		}
		im.counted = true
		im.countPeak, im.countSeq, im.countNs, im.countEnd = int64(le.Uint64(b)), le.Uint64(b[8:]), le.Uint64(b[16:]), int64(le.Uint64(b[24:]))
	case 'E':
		if b, err = read(17); err != nil {
			break
		}
		im.ended, im.endHow, im.endNs = true, b[0]&^endCut, le.Uint64(b[9:])
		if b[0]&endCut != 0 {
			im.torn = cutNote
		}
	default:
		return fmt.Errorf("record type %#x at a place where a record starts", t)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("record %q: %w", t, io.ErrUnexpectedEOF)
	}
	if err != nil {
		return err
	}
	d.n += n
	return nil
}

// pyRef is one Python frame of a 'Y' stack: its code object's key and
// its instruction offset, PY_ENTRY in bit 31.
type pyRef struct {
	key   uint64
	instr uint32
}

// pyEntry is the library's PY_ENTRY bit of an instruction offset.
const pyEntry = 1 << 31

// pyStack reads the Python frames of a 'Y' record, after its native
// frames.
func (d *decoder) pyStack(im *image, hash uint64, read func(int) ([]byte, error)) error {
	b, err := read(1)
	if err != nil {
		return err
	}
	k := int(b[0])
	refs := make([]pyRef, k)
	for i := range refs {
		if b, err = read(12); err != nil {
			return err
		}
		refs[i] = pyRef{key: binary.LittleEndian.Uint64(b), instr: binary.LittleEndian.Uint32(b[8:])}
	}
	if im.pyStacks == nil {
		im.pyStacks = map[uint64][]pyRef{}
	}
	im.pyStacks[hash] = refs
	return nil
}

// code reads a 'C' record into im.codes, after its type: the bytes of
// its strings and table it read besides read's.
func (d *decoder) code(im *image, read func(int) ([]byte, error)) (int64, error) {
	le := binary.LittleEndian
	b, err := read(32)
	if err != nil {
		return 0, err
	}
	key, addr, first := le.Uint64(b), le.Uint64(b[8:]), int32(le.Uint32(b[16:]))
	fl, ql, ll := int(le.Uint32(b[20:])), int(le.Uint32(b[24:])), int(le.Uint32(b[28:]))
	if fl > 1<<20 || ql > 1<<20 || ll > 1<<24 {
		return 0, fmt.Errorf("a code record of lengths %d, %d, %d", fl, ql, ll)
	}
	text := make([]byte, fl+ql+ll)
	if _, err = io.ReadFull(d.r, text); err != nil {
		return 0, err
	}
	if im.codes == nil {
		im.codes = map[uint64]*PyCode{}
	}
	im.codes[key] = &PyCode{Addr: addr, File: string(text[:fl]), QualName: string(text[fl : fl+ql]), FirstLine: int(first), LineTable: text[fl+ql:]}
	return int64(len(text)), nil
}
