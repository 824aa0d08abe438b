//go:build unix

package model

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

func mapFloats(n int) ([]float32, func(), error) {
	b, free, err := mapBytes(4 * n)
	if err != nil {
		return nil, nil, err
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), n), free, nil
}

func mapHalves(n int) ([]uint16, func(), error) {
	b, free, err := mapBytes(2 * n)
	if err != nil {
		return nil, nil, err
	}
	return unsafe.Slice((*uint16)(unsafe.Pointer(&b[0])), n), free, nil
}
