//go:build !unix

package server

// openFileLimit is unknown here: no RLIMIT_NOFILE.
func openFileLimit() uint64 { return 0 }
