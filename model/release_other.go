//go:build !linux

package model

// releasePages is a no-op off Linux: the mapping stays resident until the
// loader unmaps it.
func releasePages(b []byte) {}

func adviseMapping([]byte) {}
