//go:build !unix

package weights

import (
	"fmt"
	"os"
)

// Map falls back to reading the whole file where mmap is unavailable.
func Map(path string) ([]byte, func() error, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return b, func() error { return nil }, nil
}
