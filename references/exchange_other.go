//go:build !linux

package references

import (
	"errors"
	"fmt"
)

// exchangeDirs is unsupported here: the set is replaced in two renames.
func exchangeDirs(a, b string) error {
	return fmt.Errorf("exchanging %s and %s: %w", a, b, errors.ErrUnsupported)
}
