//go:build !unix

package model

// Without mmap a block's memory is the Go heap's, returned to the system
// when the garbage collector's scavenger gets to it.
func mapFloats(n int) ([]float32, func(), error) { return make([]float32, n), func() {}, nil }

func mapHalves(n int) ([]uint16, func(), error) { return make([]uint16, n), func() {}, nil }
