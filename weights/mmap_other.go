//go:build !unix

package weights

import (
	"fmt"

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

// MapPopulated reads path whole where there is no mmap.
func MapPopulated(path string) ([]byte, func() error, error) { return Map(path) }
