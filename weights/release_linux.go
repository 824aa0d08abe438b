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

// adviseMapping asks the kernel to map b, a file mapping being converted,
// with small pages: where the page cache holds a file in 2 MB folios the
// kernel otherwise maps whole folios at a fault, putting back pages that
// Release just dropped (a Q5_0 file's load kept 37 MB of it resident).
func adviseMapping(b []byte) {
	if len(b) > 0 {
		_ = unix.Madvise(b, unix.MADV_NOHUGEPAGE)
	}
}
