//go:build unix

package kvcache

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// mapBytes gives a KV block memory of its own, outside the Go heap: it is
// returned to the system the moment the block is freed (munmap), so a
// server's resident memory follows the blocks held instead of waiting for
// the garbage collector and its scavenger, and pages are only resident
// once a position in them is written.
func mapBytes(n int) ([]byte, func(), error) {
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil, nil, err
	}
	return b, func() { _ = unix.Munmap(b) }, nil
}

// A mapping the system refuses (vm.max_map_count reached, say) falls back
// to the Go heap: slower to give back, never a failed request.
func mapFloats(n int) ([]float32, func()) {
	b, free, err := mapBytes(4 * n)
	if err != nil {
		return make([]float32, n), func() {}
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), n), free
}

func mapHalves(n int) ([]uint16, func()) {
	b, free, err := mapBytes(2 * n)
	if err != nil {
		return make([]uint16, n), func() {}
	}
	return unsafe.Slice((*uint16)(unsafe.Pointer(&b[0])), n), free
}
