//go:build linux

package model

import (
	"os"

	"golang.org/x/sys/unix"
)

// releasePages drops the whole pages inside b, a read-only file mapping
// (never heap memory: MADV_DONTNEED would zero it), from the resident set.
// The data stays in the page cache, and the pages would fault back in if
// read again. Errors only cost memory, so they are ignored.
func releasePages(b []byte) {
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
