package model

import (
	"encoding/binary"
	"unsafe"

	"github.com/llorch/llorch-check/kernels"
	"github.com/llorch/llorch-check/safetensors"
)

// convertChunk is the number of elements convertTensor decodes between two
// releases of the source: 16 MiB of float32, small next to any weights file
// where peak memory matters.
const convertChunk = 4 << 20

// convertTensor converts t to a fresh float32 slice chunk by chunk, calling
// release on each source range once it is decoded. With a file mapping and
// releasePages this keeps the peak resident set near the size of the
// converted weights instead of twice it: the touched mapping would
// otherwise stay resident until the whole file is unmapped.
func convertTensor(f *safetensors.File, t safetensors.Tensor, release func([]byte)) []float32 {
	if release == nil {
		return f.Float32s(t)
	}
	out := make([]float32, t.Numel())
	raw := f.Raw(t)
	size := len(raw) / max(len(out), 1)
	for start := 0; start < len(out); start += convertChunk {
		end := min(start+convertChunk, len(out))
		src := raw[start*size : end*size]
		safetensors.DecodeInto(out[start:end], t.DType, src)
		release(src)
	}
	return out
}

// convertTensor16 rounds t to float16 chunk by chunk through buf (reused
// across tensors, grown as needed), releasing each source range as
// convertTensor does: a float32 copy of the tensor never exists whole, so
// loading float32 weights as float16 peaks near the float16 size.
func convertTensor16(f *safetensors.File, t safetensors.Tensor, release func([]byte), buf *[]float32) ([]uint16, error) {
	n := t.Numel()
	out := make([]uint16, n)
	raw := f.Raw(t)
	size := len(raw) / max(n, 1)
	if k := min(convertChunk, n); cap(*buf) < k {
		*buf = make([]float32, k)
	}
	for start := 0; start < n; start += convertChunk {
		end := min(start+convertChunk, n)
		src, vals := raw[start*size:end*size], (*buf)[:end-start]
		safetensors.DecodeInto(vals, t.DType, src)
		if err := kernels.RoundFloat16(out[start:end], vals, start); err != nil {
			return nil, err
		}
		if release != nil {
			release(src)
		}
	}
	return out, nil
}

// copyFloat16 copies an F16 tensor's little-endian bits, releasing the
// source as convertTensor does.
func copyFloat16(f *safetensors.File, t safetensors.Tensor, release func([]byte)) []uint16 {
	out := make([]uint16, t.Numel())
	raw := f.Raw(t)
	for start := 0; start < len(out); start += convertChunk {
		end := min(start+convertChunk, len(out))
		src := raw[2*start : 2*end]
		for i := range out[start:end] {
			out[start+i] = binary.LittleEndian.Uint16(src[2*i:])
		}
		if release != nil {
			release(src)
		}
	}
	return out
}

// uintptrOf is the address of b's first byte.
func uintptrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
