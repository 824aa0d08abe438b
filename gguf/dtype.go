package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/llorch/llorch-check/internal/ggmlnum"
)

// Q8_0 is ggml's block_q8_0: per 32 consecutive values along the
// fastest-varying dimension, one float16 scale d followed by 32 int8 q, each
// value being q·d.
const (
	q8BlockSize = 32
	q8BlockLen  = 2 + q8BlockSize
)

// DecodeFloat32 converts raw tensor data of type t into dst, which must hold
// exactly the tensor's elements: F32, F16, BF16, and the block types Q8_0,
// Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K and Q6_K, dequantised exactly as
// ggml's dequantize_row_* (quant.go).
func DecodeFloat32(t GGMLType, raw []byte, dst []float32) error {
	want, err := byteLen(t, len(dst))
	if err != nil {
		return err
	}
	if len(raw) != want {
		return fmt.Errorf("gguf: %s data is %d bytes, %d elements need %d", t, len(raw), len(dst), want)
	}
	switch t {
	case GGMLTypeF32:
		if littleEndian && len(dst) > 0 {
			// The file's bytes are the values' bits in this machine's order.
			copy(unsafe.Slice((*byte)(unsafe.Pointer(&dst[0])), 4*len(dst)), raw)
			break
		}
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
	case GGMLTypeF16:
		for i := range dst {
			dst[i] = Float16To32(binary.LittleEndian.Uint16(raw[2*i:]))
		}
	case GGMLTypeBF16:
		for i := range dst {
			dst[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(raw[2*i:])) << 16)
		}
	default:
		decodeBlocks(t, raw, dst)
	}
	return nil
}

// littleEndian says this machine stores a uint16 low byte first, as GGUF does.
var littleEndian = func() bool { v := uint16(1); return *(*byte)(unsafe.Pointer(&v)) == 1 }()

// DecodableTypes names the types DecodeFloat32 reads, for error messages.
const DecodableTypes = "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K"

// Decodable says whether DecodeFloat32 reads type t.
func Decodable(t GGMLType) bool {
	switch t {
	case GGMLTypeF32, GGMLTypeF16, GGMLTypeBF16:
		return true
	}
	_, ok := groupDecoders[t]
	return ok
}

// EncodeFloat32 converts src to tensor data of type t: F32, F16 or BF16
// (round to nearest even) or Q8_0 (ggml's quantize_row_q8_0_ref, bit for
// bit).
func EncodeFloat32(t GGMLType, src []float32) ([]byte, error) {
	if t != GGMLTypeF32 && t != GGMLTypeF16 && t != GGMLTypeBF16 && t != GGMLTypeQ8_0 {
		return nil, fmt.Errorf("gguf: encoding %s is not supported (F32, F16, BF16, Q8_0)", t)
	}
	n, err := byteLen(t, len(src))
	if err != nil {
		return nil, err
	}
	out := make([]byte, n)
	switch t {
	case GGMLTypeF32:
		for i, v := range src {
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
		}
	case GGMLTypeF16:
		for i, v := range src {
			binary.LittleEndian.PutUint16(out[2*i:], Float32To16(v))
		}
	case GGMLTypeBF16:
		for i, v := range src {
			binary.LittleEndian.PutUint16(out[2*i:], Float32ToBF16(v))
		}
	case GGMLTypeQ8_0:
		for b := 0; b < len(src)/q8BlockSize; b++ {
			quantizeQ8Block(out[b*q8BlockLen:(b+1)*q8BlockLen], src[b*q8BlockSize:(b+1)*q8BlockSize])
		}
	}
	return out, nil
}

// Float32ToBF16 rounds a float32 to bfloat16 bits as ggml's
// ggml_compute_fp32_to_bf16 (and gguf-py's converter) do: to nearest,
// ties to even, and a NaN kept a quiet NaN with its sign and top payload
// bits (rounding could carry a NaN's payload into infinity).
func Float32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16) | 64
	}
	return uint16((u + 0x7fff + (u>>16)&1) >> 16)
}

// quantizeQ8Block follows ggml: the scale is amax/127 in float32, values
// are multiplied by its float32 inverse and rounded half away from zero,
// and only then is the scale itself rounded to float16 for storage.
func quantizeQ8Block(dst []byte, x []float32) {
	var amax float32
	for _, v := range x {
		amax = max(amax, float32(math.Abs(float64(v))))
	}
	d := amax / 127
	var id float32
	if d != 0 {
		id = 1 / d
	}
	binary.LittleEndian.PutUint16(dst, Float32To16(d))
	for j, v := range x {
		dst[2+j] = byte(int8(math.Round(float64(v * id))))
	}
}

// byteLen is the data size of n elements of type t, for the types this
// file converts.
func byteLen(t GGMLType, n int) (int, error) {
	switch t {
	case GGMLTypeF32:
		return 4 * n, nil
	case GGMLTypeF16, GGMLTypeBF16:
		return 2 * n, nil
	}
	if _, ok := groupDecoders[t]; ok {
		l := layouts[t]
		if n%int(l.blockSize) != 0 {
			return 0, fmt.Errorf("gguf: %d elements are not whole %s blocks of %d", n, t, l.blockSize)
		}
		return n / int(l.blockSize) * int(l.typeSize), nil
	}
	return 0, fmt.Errorf("gguf: converting %s is not supported (%s)", t, DecodableTypes)
}

// Float16To32 converts IEEE binary16 exactly, subnormals, infinities and
// NaN payloads included (ggmlnum.Float16To32).
func Float16To32(h uint16) float32 { return ggmlnum.Float16To32(h) }

// Float32To16 rounds to the nearest binary16, ties to even, as numpy's
// astype(float16) and ggml's GGML_FP32_TO_FP16 do; overflow gives ±Inf and
// NaN stays NaN (ggmlnum.Float32To16).
func Float32To16(f float32) uint16 { return ggmlnum.Float32To16(f) }
