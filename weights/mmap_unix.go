//go:build unix

package weights

import (
	"fmt"
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

// MapPrivate maps path as a private, writable copy whose pages come from
// the page cache until written (a weights cache the kernels use in place:
// MAP_POPULATE maps every page in the one call, not a fault a page);
// unmap ends it.
func MapPrivate(path string) (data []byte, unmap func() error, err error) {
	f, err := regularfile.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("stat %s: %w", path, err)
	}
	size := st.Size()
	if size == 0 || size != int64(int(size)) {
		return nil, nil, fmt.Errorf("%s: %d bytes cannot be mapped", path, size)
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|mapPopulate)
	if err != nil {
		return nil, nil, fmt.Errorf("mapping %s: %w", path, err)
	}
	return b, func() error { return syscall.Munmap(b) }, nil
}
