//go:build unix

package regularfile

import (
	"os"
	"syscall"
)

// readFlags opens without blocking: a regular file reads the same either
// way, and a named pipe swapped in after the Stat opens at once, to be
// refused, instead of waiting for a writer.
const readFlags = os.O_RDONLY | syscall.O_NONBLOCK
