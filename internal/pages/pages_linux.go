//go:build linux

package pages

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Populate maps the whole pages of b, fresh heap memory about to be
// written (never a file mapping), in one call, asking for transparent
// huge pages first (the machine's setting may grant them only when
// asked). Buffers below Big are left to fault as they are written; errors
// (an older kernel) only cost the faults, so they are ignored.
func Populate(b []byte) {
	if len(b) < Big {
		return
	}
	page := uintptr(os.Getpagesize())
	base := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lo := (page - base%page) % page
	hi := uintptr(len(b)) - (base+uintptr(len(b)))%page
	inner := b[lo:hi]
	_ = unix.Madvise(inner, unix.MADV_HUGEPAGE)
	_ = unix.Madvise(inner, unix.MADV_POPULATE_WRITE)
}
