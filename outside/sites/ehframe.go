package sites

import (
	"debug/elf"
	"encoding/binary"
	"sort"
)

// fdeRange is one function's code [start, end) as its unwind entry (an
// FDE of .eh_frame) gives it, in ELF addresses.
type fdeRange struct{ start, end uint64 }

// funcRanges are the function ranges of f's .eh_frame, sorted by start;
// nil without one. A stripped binary keeps its .eh_frame (the unwinder
// needs it, ours included), so this knows where every function with
// unwind information starts, named or not; a hot/cold split function
// has one entry per part.
func funcRanges(f *elf.File) []fdeRange {
	s := f.Section(".eh_frame")
	if s == nil || s.Type == elf.SHT_NOBITS {
		return nil
	}
	data, err := s.Data()
	if err != nil {
		return nil
	}
	ptr := 8
	if f.Class == elf.ELFCLASS32 {
		ptr = 4
	}
	out := parseEHFrame(data, s.Addr, f.ByteOrder, ptr)
	sort.Slice(out, func(i, j int) bool { return out[i].start < out[j].start })
	return out
}

// parseEHFrame reads the FDEs of an .eh_frame section loaded at addr
// (the format: the LSB's "Exception Frames", DWARF's CFI with GNU
// pointer encodings). Entries it cannot read are skipped; a malformed
// length ends the walk.
func parseEHFrame(data []byte, addr uint64, order binary.ByteOrder, ptr int) []fdeRange {
	cies := map[int]byte{} // CIE offset -> its FDEs' pointer encoding
	var out []fdeRange
	for off := 0; off+4 <= len(data); {
		length := uint64(order.Uint32(data[off:]))
		hdr, idSize := 4, 4
		if length == 0xffffffff {
			if off+12 > len(data) {
				break
			}
			length, hdr, idSize = order.Uint64(data[off+4:]), 12, 8
		}
		body := off + hdr
		next := uint64(body) + length
		if length == 0 {
			off = body // a zero terminator
			continue
		}
		if next > uint64(len(data)) || next <= uint64(body) || length < uint64(idSize) {
			break
		}
		var id uint64
		if idSize == 4 {
			id = uint64(order.Uint32(data[body:]))
		} else {
			id = order.Uint64(data[body:])
		}
		if id != 0 { // an FDE: id is the distance back to its CIE
			cie := body - int(id)
			enc, ok := cies[cie]
			if !ok && cie >= 0 && cie < len(data) {
				enc, ok = parseCIE(data, cie, order, ptr)
				if ok {
					cies[cie] = enc
				}
			}
			if ok {
				r := reader{b: data[:next], pos: body + idSize, order: order, ptr: ptr}
				where := addr + uint64(r.pos)
				start, ok1 := r.encoded(enc, where)
				size, ok2 := r.encoded(enc&0x0f, 0) // the range: the format alone
				if ok1 && ok2 && start != 0 && size != 0 && start+size > start {
					out = append(out, fdeRange{start, start + size})
				}
			}
		}
		off = int(next)
	}
	return out
}

// parseCIE is the pointer encoding of the FDEs of the CIE at off
// (augmentation 'R'; absolute pointers without one).
func parseCIE(data []byte, off int, order binary.ByteOrder, ptr int) (byte, bool) {
	r := reader{b: data, pos: off, order: order, ptr: ptr}
	length := uint64(r.u32())
	idSize := 4
	if length == 0xffffffff {
		length, idSize = r.u64(), 8
	}
	if r.bad || uint64(r.pos)+length > uint64(len(data)) {
		return 0, false
	}
	r.b = data[:uint64(r.pos)+length]
	r.pos += idSize
	version := r.u8()
	aug := r.cstring()
	if len(aug) >= 2 && aug[:2] == "eh" {
		r.pos += ptr // GCC 2's eh_ptr
	}
	r.uleb() // code alignment
	r.sleb() // data alignment
	if version == 1 {
		r.u8() // return address register
	} else {
		r.uleb()
	}
	enc := byte(0) // DW_EH_PE_absptr
	if len(aug) == 0 || aug[0] != 'z' {
		return enc, !r.bad
	}
	r.uleb() // augmentation data length
	for _, c := range aug[1:] {
		switch c {
		case 'R':
			enc = r.u8()
		case 'P':
			pe := r.u8()
			r.encoded(pe&^0x80, 0) // the personality routine
		case 'L':
			r.u8() // the LSDA's encoding
		case 'S', 'B', 'G':
		default:
			return 0, false // an augmentation we cannot skip
		}
	}
	return enc, !r.bad
}

// reader reads .eh_frame's fields; bad is set by any read past the end.
type reader struct {
	b     []byte
	pos   int
	order binary.ByteOrder
	ptr   int
	bad   bool
}

func (r *reader) need(n int) bool {
	if r.bad || r.pos+n > len(r.b) || n < 0 {
		r.bad = true
		return false
	}
	return true
}

func (r *reader) u8() byte {
	if !r.need(1) {
		return 0
	}
	r.pos++
	return r.b[r.pos-1]
}

func (r *reader) u16() uint16 {
	if !r.need(2) {
		return 0
	}
	r.pos += 2
	return r.order.Uint16(r.b[r.pos-2:])
}

func (r *reader) u32() uint32 {
	if !r.need(4) {
		return 0
	}
	r.pos += 4
	return r.order.Uint32(r.b[r.pos-4:])
}

func (r *reader) u64() uint64 {
	if !r.need(8) {
		return 0
	}
	r.pos += 8
	return r.order.Uint64(r.b[r.pos-8:])
}

func (r *reader) cstring() string {
	for i := r.pos; i < len(r.b); i++ {
		if r.b[i] == 0 {
			s := string(r.b[r.pos:i])
			r.pos = i + 1
			return s
		}
	}
	r.bad = true
	return ""
}

func (r *reader) uleb() uint64 {
	var v uint64
	for shift := 0; ; shift += 7 {
		c := r.u8()
		if r.bad {
			return 0
		}
		if shift < 64 {
			v |= uint64(c&0x7f) << shift
		}
		if c&0x80 == 0 {
			return v
		}
	}
}

func (r *reader) sleb() int64 {
	var v int64
	shift := 0
	for {
		c := r.u8()
		if r.bad {
			return 0
		}
		if shift < 64 {
			v |= int64(c&0x7f) << shift
		}
		shift += 7
		if c&0x80 == 0 {
			if shift < 64 && c&0x40 != 0 {
				v |= -1 << shift
			}
			return v
		}
	}
}

// encoded reads a pointer in the DW_EH_PE encoding enc; where is the
// field's own address (for pc-relative pointers). Encodings relative to
// a base this reader does not know (text, data, function) are not read.
func (r *reader) encoded(enc byte, where uint64) (uint64, bool) {
	if enc == 0xff { // DW_EH_PE_omit
		return 0, false
	}
	var v uint64
	switch enc & 0x0f {
	case 0x00: // absptr
		if r.ptr == 4 {
			v = uint64(r.u32())
		} else {
			v = r.u64()
		}
	case 0x01:
		v = r.uleb()
	case 0x02:
		v = uint64(r.u16())
	case 0x03:
		v = uint64(r.u32())
	case 0x04:
		v = r.u64()
	case 0x09:
		v = uint64(r.sleb())
	case 0x0a:
		v = uint64(int64(int16(r.u16())))
	case 0x0b:
		v = uint64(int64(int32(r.u32())))
	case 0x0c:
		v = r.u64()
	default:
		r.bad = true
	}
	if r.bad {
		return 0, false
	}
	switch enc & 0x70 {
	case 0x00: // absolute
	case 0x10: // pc-relative
		v += where
	default:
		return 0, false
	}
	if r.ptr == 4 {
		v &= 0xffffffff
	}
	return v, true
}

// funcAt is the range that holds addr, if any.
func funcAt(rs []fdeRange, addr uint64) (fdeRange, bool) {
	i := sort.Search(len(rs), func(i int) bool { return rs[i].start > addr }) - 1
	// Ranges do not nest, but a few may share a start (an entry for a
	// function and one for its first instructions).
	for k := i; k >= 0 && k > i-4; k-- {
		if rs[k].start <= addr && addr < rs[k].end {
			return rs[k], true
		}
	}
	return fdeRange{}, false
}
