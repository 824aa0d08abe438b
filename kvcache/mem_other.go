//go:build !unix

package kvcache

// Without mmap a block's memory is the Go heap's, returned to the system
// when the garbage collector's scavenger gets to it.
func mapFloats(n int) ([]float32, func()) { return make([]float32, n), func() {} }

func mapHalves(n int) ([]uint16, func()) { return make([]uint16, n), func() {} }
