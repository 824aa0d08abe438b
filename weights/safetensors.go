package weights

import (
	"encoding/binary"
	"math"
	"unsafe"

	"github.com/llorch/llorch-check/internal/pages"
	"github.com/llorch/llorch-check/kernels"
	"github.com/llorch/llorch-check/safetensors"
)

// chunk is the number of elements Float32s decodes between two releases
// of the source: 16 MiB of float32, small next to any weights file where
// peak memory matters.
const chunk = 4 << 20

// Float32s converts t to a fresh float32 slice chunk by chunk, calling
// release (if not nil) on each source range once it is decoded. With a
// file mapping and Release this keeps the peak resident set near the size
// of the converted weights instead of twice it: the touched mapping would
// otherwise stay resident until the whole file is unmapped.
func Float32s(f *safetensors.File, t safetensors.Tensor, release func([]byte)) []float32 {
	if release == nil {
		return f.Float32s(t)
	}
	out := make([]float32, t.Numel())
	raw := f.Raw(t)
	size := len(raw) / max(len(out), 1)
	for start := 0; start < len(out); start += chunk {
		end := min(start+chunk, len(out))
		src := raw[start*size : end*size]
		safetensors.DecodeInto(out[start:end], t.DType, src)
		release(src)
	}
	return out
}

// RoundFloat16 rounds t to float16 bits chunk by chunk through buf (reused
// across tensors, grown as needed), releasing each source range as
// Float32s does: a float32 copy of the tensor never exists whole, so
// loading float32 weights as float16 peaks near the float16 size.
func RoundFloat16(f *safetensors.File, t safetensors.Tensor, release func([]byte), buf *[]float32) ([]uint16, error) {
	n := t.Numel()
	out := make([]uint16, n)
	raw := f.Raw(t)
	size := len(raw) / max(n, 1)
	if k := min(chunk, n); cap(*buf) < k {
		*buf = make([]float32, k)
	}
	for start := 0; start < n; start += chunk {
		end := min(start+chunk, n)
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

// Float16Bits copies an F16 tensor's little-endian bits, releasing the
// source as Float32s does.
func Float16Bits(f *safetensors.File, t safetensors.Tensor, release func([]byte)) []uint16 {
	out := pages.Make[uint16](t.Numel())
	Bits16Into(out, f, t, release)
	return out
}

// BFloat16Bits copies a BF16 tensor's little-endian bits, releasing the
// source as Float32s does.
func BFloat16Bits(f *safetensors.File, t safetensors.Tensor, release func([]byte)) []uint16 {
	return Float16Bits(f, t, release)
}

// Bits16Into copies a 16-bit tensor's little-endian bits into dst (at
// least its length), chunk by chunk, releasing each source range once
// copied: a loader assembling a fused matrix copies each part straight
// into it. On a little-endian CPU the bits are the bytes: a chunk is one
// memmove (decoding element by element was 70 of the 110 CPU-seconds of
// an 8B bfloat16 load). With a mapping (release not nil) the next chunk
// is asked of the disk while this one is copied, and this one's pages
// are mapped in one call (PopulateRead): under a hypervisor a fault a 4 KB
// page made the copy of a 16 GB model cost more than its reading.
func Bits16Into(dst []uint16, f *safetensors.File, t safetensors.Tensor, release func([]byte)) {
	out := dst[:t.Numel()]
	raw := f.Raw(t)
	var bytes []byte
	if littleEndian && len(out) > 0 {
		bytes = unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(out))), 2*len(out))
	}
	for start := 0; start < len(out); start += chunk {
		end := min(start+chunk, len(out))
		src := raw[2*start : 2*end]
		if release != nil && end < len(out) {
			Prefetch(raw[2*end : 2*min(end+chunk, len(out))])
		}
		if release != nil {
			PopulateRead(src)
		}
		if bytes != nil {
			copy(bytes[2*start:2*end], src)
		} else {
			for i := range out[start:end] {
				out[start+i] = binary.LittleEndian.Uint16(src[2*i:])
			}
		}
		if release != nil {
			release(src)
		}
	}
}

// FirstDifference compares two tensors of as many elements value by value
// in the file, whatever their dtypes, releasing both as Float32s does: no
// copy is materialised. It returns the first index whose float32 bits
// differ and the two values there, or -1.
func FirstDifference(f *safetensors.File, t, u safetensors.Tensor, release func([]byte)) (i int, a, b float32) {
	raw, uraw := f.Raw(t), f.Raw(u)
	size, _ := safetensors.DTypeSize(t.DType)
	usize, _ := safetensors.DTypeSize(u.DType)
	var buf, ubuf [1024]float32
	n := t.Numel()
	for start := 0; start < n; start += chunk {
		end := min(start+chunk, n)
		for i := start; i < end; i += len(buf) {
			k := min(len(buf), end-i)
			safetensors.DecodeInto(buf[:k], t.DType, raw[i*size:(i+k)*size])
			safetensors.DecodeInto(ubuf[:k], u.DType, uraw[i*usize:(i+k)*usize])
			for j, v := range buf[:k] {
				if math.Float32bits(v) != math.Float32bits(ubuf[j]) {
					return i + j, v, ubuf[j]
				}
			}
		}
		if release != nil {
			release(raw[start*size : end*size])
			release(uraw[start*usize : end*usize])
		}
	}
	return -1, 0, 0
}

// uintptrOf is the address of b's first byte.
func uintptrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
