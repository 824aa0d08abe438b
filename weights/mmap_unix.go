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
