package procfs

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
)

// Status holds the memory and thread fields of /proc/<pid>/status. Sizes
// are bytes. A field the kernel did not print (a kernel thread has no Vm*
// lines, kernels before 4.5 have no Rss* lines) is zero.
type Status struct {
	// Name is the command name (the Name line), at most 15 bytes.
	Name string `json:"name"`
	// VmPeakBytes is the peak virtual size (VmPeak).
	VmPeakBytes uint64 `json:"vm_peak_bytes"`
	// VmSizeBytes is the virtual size, the VSZ of ps (VmSize).
	VmSizeBytes uint64 `json:"vm_size_bytes"`
	// VmHWMBytes is the peak resident set size, the high water mark
	// (VmHWM).
	VmHWMBytes uint64 `json:"vm_hwm_bytes"`
	// VmRSSBytes is the resident set size (VmRSS); the kernel prints it as
	// RssAnon + RssFile + RssShmem.
	VmRSSBytes uint64 `json:"vm_rss_bytes"`
	// RssAnonBytes is resident anonymous memory (RssAnon): heaps, stacks,
	// private dirty pages of .data/.bss, anonymous mmaps.
	RssAnonBytes uint64 `json:"rss_anon_bytes"`
	// RssFileBytes is resident file mappings (RssFile): program text,
	// shared libraries, mmapped files.
	RssFileBytes uint64 `json:"rss_file_bytes"`
	// RssShmemBytes is resident shared memory (RssShmem): SysV shm, tmpfs,
	// shared anonymous mappings, memfd.
	RssShmemBytes uint64 `json:"rss_shmem_bytes"`
	// VmDataBytes is the size of private data mappings (VmData); it counts
	// reservations, not residency.
	VmDataBytes uint64 `json:"vm_data_bytes"`
	// VmStkBytes is the size of the main thread's stack mapping (VmStk);
	// other threads' stacks are not in it.
	VmStkBytes uint64 `json:"vm_stk_bytes"`
	// VmSwapBytes is anonymous memory swapped out (VmSwap).
	VmSwapBytes uint64 `json:"vm_swap_bytes"`
	// Threads is the number of threads in the process (Threads).
	Threads int `json:"threads"`
}

// SmapsRollup holds /proc/<pid>/smaps_rollup: the per-mapping counters of
// smaps summed over all mappings. Sizes are bytes. Unlike status, these are
// exact counts from a page-table walk at read time.
type SmapsRollup struct {
	// RssBytes is resident memory (Rss).
	RssBytes uint64 `json:"rss_bytes"`
	// PssBytes is the proportional set size (Pss): each shared page is
	// divided by the number of processes mapping it.
	PssBytes uint64 `json:"pss_bytes"`
	// PssDirtyBytes is the dirty part of Pss (Pss_Dirty, Linux 6.0+).
	PssDirtyBytes uint64 `json:"pss_dirty_bytes"`
	// PssAnonBytes is the anonymous part of Pss (Pss_Anon, Linux 5.7+).
	PssAnonBytes uint64 `json:"pss_anon_bytes"`
	// PssFileBytes is the file-backed part of Pss (Pss_File, Linux 5.7+).
	PssFileBytes uint64 `json:"pss_file_bytes"`
	// PssShmemBytes is the shmem part of Pss (Pss_Shmem, Linux 5.7+).
	PssShmemBytes uint64 `json:"pss_shmem_bytes"`
	// SharedCleanBytes is resident, unmodified pages also mapped by
	// another process (Shared_Clean).
	SharedCleanBytes uint64 `json:"shared_clean_bytes"`
	// SharedDirtyBytes is resident, modified pages also mapped by another
	// process (Shared_Dirty).
	SharedDirtyBytes uint64 `json:"shared_dirty_bytes"`
	// PrivateCleanBytes is resident, unmodified pages mapped only by this
	// process (Private_Clean).
	PrivateCleanBytes uint64 `json:"private_clean_bytes"`
	// PrivateDirtyBytes is resident, modified pages mapped only by this
	// process (Private_Dirty): what freeing the process would return.
	PrivateDirtyBytes uint64 `json:"private_dirty_bytes"`
	// ReferencedBytes is memory marked referenced or accessed
	// (Referenced).
	ReferencedBytes uint64 `json:"referenced_bytes"`
	// AnonymousBytes is resident anonymous memory (Anonymous).
	AnonymousBytes uint64 `json:"anonymous_bytes"`
	// LazyFreeBytes is memory marked MADV_FREE that the kernel has not
	// reclaimed yet (LazyFree).
	LazyFreeBytes uint64 `json:"lazy_free_bytes"`
	// AnonHugePagesBytes is anonymous memory backed by transparent huge
	// pages (AnonHugePages).
	AnonHugePagesBytes uint64 `json:"anon_huge_pages_bytes"`
	// SwapBytes is anonymous memory swapped out (Swap).
	SwapBytes uint64 `json:"swap_bytes"`
	// SwapPssBytes is the proportional share of Swap (SwapPss).
	SwapPssBytes uint64 `json:"swap_pss_bytes"`
	// LockedBytes is memory locked with mlock (Locked).
	LockedBytes uint64 `json:"locked_bytes"`
}

// ParseStatus parses the text of a status file; path names it in errors.
func ParseStatus(b []byte, path string) (Status, error) { return parseStatus(b, path, "") }

// parseStatus is ParseStatus; when the Name line spells prevName, the result
// shares that string instead of allocating a new one.
func parseStatus(b []byte, path, prevName string) (Status, error) {
	var s Status
	err := eachLine(b, path, func(key, val []byte) error {
		var dst *uint64
		switch string(key) {
		case "Name":
			if string(val) == prevName {
				s.Name = prevName
			} else {
				s.Name = string(val)
			}
			return nil
		case "Threads":
			n, err := strconv.Atoi(string(val))
			if err != nil || n < 0 {
				return fmt.Errorf("Threads: %w: not a count: %q", ErrMalformed, val)
			}
			s.Threads = n
			return nil
		case "VmPeak":
			dst = &s.VmPeakBytes
		case "VmSize":
			dst = &s.VmSizeBytes
		case "VmHWM":
			dst = &s.VmHWMBytes
		case "VmRSS":
			dst = &s.VmRSSBytes
		case "RssAnon":
			dst = &s.RssAnonBytes
		case "RssFile":
			dst = &s.RssFileBytes
		case "RssShmem":
			dst = &s.RssShmemBytes
		case "VmData":
			dst = &s.VmDataBytes
		case "VmStk":
			dst = &s.VmStkBytes
		case "VmSwap":
			dst = &s.VmSwapBytes
		default:
			return nil
		}
		n, err := parseKB(key, val)
		*dst = n
		return err
	})
	return s, err
}

// ParseSmapsRollup parses the text of a smaps_rollup file; path names it in
// errors. The first line, the "[rollup]" pseudo-mapping header, is skipped.
func ParseSmapsRollup(b []byte, path string) (SmapsRollup, error) {
	var s SmapsRollup
	err := eachLine(b, path, func(key, val []byte) error {
		var dst *uint64
		switch string(key) {
		case "Rss":
			dst = &s.RssBytes
		case "Pss":
			dst = &s.PssBytes
		case "Pss_Dirty":
			dst = &s.PssDirtyBytes
		case "Pss_Anon":
			dst = &s.PssAnonBytes
		case "Pss_File":
			dst = &s.PssFileBytes
		case "Pss_Shmem":
			dst = &s.PssShmemBytes
		case "Shared_Clean":
			dst = &s.SharedCleanBytes
		case "Shared_Dirty":
			dst = &s.SharedDirtyBytes
		case "Private_Clean":
			dst = &s.PrivateCleanBytes
		case "Private_Dirty":
			dst = &s.PrivateDirtyBytes
		case "Referenced":
			dst = &s.ReferencedBytes
		case "Anonymous":
			dst = &s.AnonymousBytes
		case "LazyFree":
			dst = &s.LazyFreeBytes
		case "AnonHugePages":
			dst = &s.AnonHugePagesBytes
		case "Swap":
			dst = &s.SwapBytes
		case "SwapPss":
			dst = &s.SwapPssBytes
		case "Locked":
			dst = &s.LockedBytes
		default:
			return nil
		}
		n, err := parseKB(key, val)
		*dst = n
		return err
	})
	return s, err
}

// eachLine calls fn with the key and trimmed value of every "Key: value"
// line of b. A first line ending in "[rollup]" is a mapping header and is
// skipped. Errors from fn, and lines with no colon, become *ParseError.
func eachLine(b []byte, path string, fn func(key, val []byte) error) error {
	for n := 1; len(b) > 0; n++ {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if len(line) == 0 {
			continue
		}
		if n == 1 && bytes.HasSuffix(line, []byte("[rollup]")) {
			continue
		}
		i := bytes.IndexByte(line, ':')
		if i <= 0 {
			return &ParseError{path, n, fmt.Errorf("%w: no \"key:\" in %q", ErrMalformed, line)}
		}
		if err := fn(line[:i], bytes.TrimSpace(line[i+1:])); err != nil {
			return &ParseError{path, n, err}
		}
	}
	return nil
}

// parseKB reads "<n> kB" and returns n*1024.
func parseKB(key, val []byte) (uint64, error) {
	num, unit, ok := bytes.Cut(val, []byte(" "))
	unit = bytes.TrimSpace(unit)
	if !ok || string(unit) != "kB" {
		return 0, fmt.Errorf("%s: %w: want \"<n> kB\", got %q", key, ErrMalformed, val)
	}
	n, err := strconv.ParseUint(string(num), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w: %q is not a number", key, ErrMalformed, num)
	}
	if n > math.MaxUint64/1024 {
		return 0, fmt.Errorf("%s: %w: %d kB overflows bytes", key, ErrMalformed, n)
	}
	return n * 1024, nil
}
