package reconcile

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// OpenUnder is an Input.OpenFile for another process: its mapped files
// by their paths under root ("/proc/<pid>/root"), its own view of the
// file system, so that a process in a container, or one whose file was
// replaced since it was mapped, is read right. Where root itself may not
// be read (it needs ptrace access: attach to another user's process), the
// path is opened as this process sees it: the same file in the same mount
// namespace, and bssEnd checks the headers against the mappings.
func OpenUnder(root string) func(path string) (io.ReaderAt, error) {
	return func(path string) (io.ReaderAt, error) {
		ra, err := openRegular(filepath.Join(root, path))
		if errors.Is(err, fs.ErrPermission) {
			return openRegular(path)
		}
		return ra, err
	}
}

// openRegular opens path if it is a regular file: opening a device (a
// driver's node mapped private) can have effects, and a device is no ELF
// object.
func openRegular(path string) (io.ReaderAt, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, errNotELF
	}
	return os.Open(path)
}

// errNotELF: the file mapped there is readable and is not an ELF object
// (a data file mapped private and writable): it has no .bss.
var errNotELF = errors.New("not an ELF object")

// bssEnd returns where the .bss of the ELF object whose writable data is
// mapping i ends (exclusive, rounded up to the page): what the loader (the
// kernel for the binary, ld.so for libraries) maps anonymous above a
// PT_LOAD segment whose size in memory exceeds its size in the file.
//
// smaps' file offsets are not kept (procfs.Mapping), so the segment is
// found from the mappings' order instead: the object's lowest mapping (its
// first PT_LOAD, file offset 0) gives the load bias, and the writable
// segment is the one whose file-backed part, rounded up to the page, ends
// where mapping i ends. The anonymous .bss starts there and ends at
// bias + p_vaddr + p_memsz, rounded up to the page.
//
// errNotELF: the file is readable and not ELF. Any other error: the file
// could not be read (deleted, not in this mount namespace), or its headers
// do not match the mappings (another file at that path).
func (l *layout) bssEnd(in *Input, i int, page uint64) (uint64, error) {
	p := &l.vmas[i]
	if strings.HasSuffix(p.Path, " (deleted)") {
		return 0, errors.New("the file is deleted")
	}
	open := in.OpenFile
	if open == nil {
		open = openRegular
	}
	ra, err := open(p.Path)
	if err != nil {
		return 0, err // errNotELF from openRegular too
	}
	if c, ok := ra.(io.Closer); ok {
		defer c.Close()
	}
	var magic [4]byte
	if _, err := ra.ReadAt(magic[:], 0); err != nil {
		if errors.Is(err, io.EOF) {
			return 0, errNotELF
		}
		return 0, err
	}
	if !bytes.Equal(magic[:], []byte(elf.ELFMAG)) {
		return 0, errNotELF
	}
	f, err := elf.NewFile(ra)
	if err != nil {
		return 0, err
	}
	var loads []elf.ProgHeader
	minVaddr := ^uint64(0)
	for _, pr := range f.Progs {
		if pr.Type == elf.PT_LOAD {
			loads = append(loads, pr.ProgHeader)
			minVaddr = min(minVaddr, pr.Vaddr&^(page-1))
		}
	}
	if len(loads) == 0 {
		return 0, errNotELF
	}
	up := func(a uint64) uint64 { return (a + page - 1) &^ (page - 1) }
	// The object's mappings run down from i under the same path (RELRO
	// splits its data; glibc leaves the gaps between segments mapped
	// PROT_NONE). Its lowest is the first PT_LOAD; trying each from i
	// down finds it even where the same file is mapped twice in a row.
	for j := i; j >= 0 && l.vmas[j].Path == p.Path; j-- {
		if l.vmas[j].Start < minVaddr {
			break
		}
		bias := l.vmas[j].Start - minVaddr
		if f.Type == elf.ET_EXEC && bias != 0 {
			continue // a fixed-address binary is not relocated
		}
		for _, s := range loads {
			if s.Flags&elf.PF_W == 0 || s.Memsz < s.Filesz {
				continue
			}
			if bias+up(s.Vaddr+s.Filesz) == p.End && bias+(s.Vaddr&^(page-1)) <= p.Start {
				return bias + up(s.Vaddr+s.Memsz), nil
			}
		}
	}
	return 0, fmt.Errorf("no writable PT_LOAD segment of the file ends where its mapping %#x-%#x does", p.Start, p.End)
}
