package references

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// exchangeDirs swaps the directories a and b in one step. Where the kernel
// or the filesystem cannot (ENOSYS, EINVAL), the error wraps
// errors.ErrUnsupported.
func exchangeDirs(a, b string) error {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EINVAL), errors.Is(err, errors.ErrUnsupported):
		return fmt.Errorf("exchanging %s and %s: %w (%v)", a, b, errors.ErrUnsupported, err)
	}
	return &os.LinkError{Op: "exchange", Old: a, New: b, Err: err}
}
