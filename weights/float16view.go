package weights

import (
	"encoding/binary"
	"fmt"
	"unsafe"
)

// littleEndian says the machine's order is the GGUF file's.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// Float16View is raw, a tensor's n float16 values as a file stores them
// (little-endian), as uint16s: raw itself where the machine is
// little-endian and raw is aligned (a mapped file's tensor always is), so
// the caller copies or transposes from the file's pages in one pass; a
// decoded copy otherwise. The result may alias raw: copy it before raw's
// pages are released.
func Float16View(raw []byte, n int) ([]uint16, error) {
	if len(raw) != 2*n {
		return nil, fmt.Errorf("%d bytes for %d float16 values", len(raw), n)
	}
	if n == 0 {
		return nil, nil
	}
	if littleEndian && uintptr(unsafe.Pointer(unsafe.SliceData(raw)))%2 == 0 {
		return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(raw))), n), nil
	}
	bits := make([]uint16, n)
	for i := range bits {
		bits[i] = binary.LittleEndian.Uint16(raw[2*i:])
	}
	return bits, nil
}
