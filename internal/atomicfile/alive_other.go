//go:build !unix

package atomicfile

// alive cannot tell here, so no twin is ever taken for abandoned.
func alive(int) bool { return true }
