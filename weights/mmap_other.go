//go:build !unix

package weights

import (
	"fmt"
	"io"
	"os"

	"github.com/llorch/llorch-check/internal/regularfile"
)

// Map falls back to reading the whole file where mmap is unavailable.
func Map(path string) ([]byte, func() error, error) {
	b, err := regularfile.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("reading weights: %w", err)
	}
	return b, func() error { return nil }, nil
}

// MapPopulatedFile reads the open file f whole where there is no mmap.
func MapPopulatedFile(f *os.File) ([]byte, func() error, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", f.Name(), err)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", f.Name(), err)
	}
	return b, func() error { return nil }, nil
}
