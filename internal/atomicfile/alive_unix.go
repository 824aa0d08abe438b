//go:build unix

package atomicfile

import (
	"errors"
	"syscall"
)

// alive says whether process pid exists (EPERM: it does, owned by another
// user).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
