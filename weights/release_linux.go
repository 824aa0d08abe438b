//go:build linux

package weights

import (
	"os"

	"golang.org/x/sys/unix"
)

// Release drops the whole pages inside b, a read-only file mapping
// (never heap memory: MADV_DONTNEED would zero it), from the resident set.
// The data stays in the page cache, and the pages would fault back in if
// read again. Errors only cost memory, so they are ignored.
func Release(b []byte) {
	if len(b) == 0 {
		return
	}
	page := os.Getpagesize()
	base := uintptrOf(b)
	lo := (page - int(base%uintptr(page))) % page // first page boundary in b
	hi := len(b) - int((base+uintptr(len(b)))%uintptr(page))
	if hi-lo < page {
		return
	}
	_ = unix.Madvise(b[lo:hi], unix.MADV_DONTNEED)
}

// Prefetch asks the kernel to start reading b, a part of a file mapping
// about to be read, from the disk, and returns at once: a mapping read in
// order otherwise waits on each fault's small read-ahead. Errors only
// cost time, so they are ignored.
func Prefetch(b []byte) {
	if len(b) == 0 {
		return
	}
	page := uintptr(os.Getpagesize())
	base := uintptrOf(b)
	lo := int((page - base%page) % page)
	if lo >= len(b) {
		return
	}
	_ = unix.Madvise(b[lo:], unix.MADV_WILLNEED)
}

// PopulateRead maps the whole pages of b, a part of a file mapping about
// to be read, in one call (reading what the page cache lacks), instead of
// a fault a page. Errors (an older kernel) only cost the faults.
func PopulateRead(b []byte) {
	page := uintptr(os.Getpagesize())
	base := uintptrOf(b)
	lo := int((page - base%page) % page)
	hi := len(b) - int((base+uintptr(len(b)))%page)
	if hi-lo < int(page) {
		return
	}
	_ = unix.Madvise(b[lo:hi], unix.MADV_POPULATE_READ)
}

// adviseMapping asks the kernel to map b, a file mapping being converted,
// with small pages: where the page cache holds a file in 2 MB folios the
// kernel otherwise maps whole folios at a fault, putting back pages that
// Release just dropped (a Q5_0 file's load kept 37 MB of it resident).
func adviseMapping(b []byte) {
	if len(b) > 0 {
		_ = unix.Madvise(b, unix.MADV_NOHUGEPAGE)
	}
}

// dropCache drops the whole pages of f's bytes [off, off+n) from the page
// cache; pages still mapped by a process stay (Evict releases them
// first). POSIX_FADV_DONTNEED needs only read access, where MADV_PAGEOUT
// needs write access and leaves the large folios a page cache holds a
// file in (measured: nothing dropped).
func dropCache(f *os.File, off, n int64) {
	_ = unix.Fadvise(int(f.Fd()), off, n, unix.FADV_DONTNEED)
}
