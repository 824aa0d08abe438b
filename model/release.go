package model

import "unsafe"

// convertChunk is the number of elements convertTensor decodes between two
// releases of the source: 16 MiB of float32, small next to any weights file
// where peak memory matters.
const convertChunk = 4 << 20

// convertTensor converts t to a fresh float32 slice chunk by chunk, calling
// release on each source range once it is decoded. With a file mapping and
// releasePages this keeps the peak resident set near the size of the
// converted weights instead of twice it: the touched mapping would
// otherwise stay resident until the whole file is unmapped.
func convertTensor(f *safetensorsFile, t tensorInfo, release func([]byte)) []float32 {
	if release == nil {
		return f.toFloat32(t)
	}
	out := make([]float32, t.numel())
	raw := f.raw(t)
	size := len(raw) / max(len(out), 1)
	for start := 0; start < len(out); start += convertChunk {
		end := min(start+convertChunk, len(out))
		src := raw[start*size : end*size]
		decodeInto(out[start:end], t.DType, src)
		release(src)
	}
	return out
}

// uintptrOf is the address of b's first byte.
func uintptrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
