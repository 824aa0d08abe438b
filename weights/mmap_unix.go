//go:build unix

package weights

import (
	"fmt"
	"os"
	"syscall"

	"github.com/llorch/llorch-check/internal/regularfile"
)

// Map maps path read-only so that converting the weights never needs the
// raw file and its float32 copy on the heap at the same time. unmap ends
// the mapping; nothing converted from it may alias it.
func Map(path string) (data []byte, unmap func() error, err error) {
	f, err := regularfile.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("opening weights: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("stat %s: %w", path, err)
	}
	size := st.Size()
	if size == 0 {
		return []byte{}, func() error { return nil }, nil // mmap rejects length 0
	}
	if size != int64(int(size)) {
		return nil, nil, fmt.Errorf("%s: %d bytes is too large to map", path, size)
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, fmt.Errorf("mapping %s: %w", path, err)
	}
	adviseMapping(b)
	return b, func() error { return syscall.Munmap(b) }, nil
}

// MapPopulatedFile maps the open file f read-only with every page mapped
// in the one call (MAP_POPULATE: not a fault a page), for a weights cache
// the kernels use in place; the bytes a caller checked through f are the
// ones mapped, even if its name was since renamed over. Read-only, the
// pages are the page cache's own: a writable private mapping populated is
// a copy of the file (260-310 ms for 528 MB here, and its size again in
// anonymous memory). unmap ends it.
func MapPopulatedFile(f *os.File) (data []byte, unmap func() error, err error) {
	st, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("stat %s: %w", f.Name(), err)
	}
	size := st.Size()
	if size == 0 || size != int64(int(size)) {
		return nil, nil, fmt.Errorf("%s: %d bytes cannot be mapped", f.Name(), size)
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED|mapPopulate)
	if err != nil {
		return nil, nil, fmt.Errorf("mapping %s: %w", f.Name(), err)
	}
	return b, func() error { return syscall.Munmap(b) }, nil
}
