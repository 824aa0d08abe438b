// Package ggmlnum is the arithmetic of ggml's number formats, shared by
// the file-format package gguf, the kernels that keep a model in those
// formats and the float16 KV cache (kvcache): IEEE binary16 conversion,
// and the float a quantised group's integer stands for (its scale formed
// from float16 factors, then scaled and offset as ggml's dequantisers
// round them). It imports nothing of the module, so that all can import
// it.
package ggmlnum

import "math"

// Float16To32 converts IEEE binary16 exactly, subnormals, infinities and
// NaN payloads included.
func Float16To32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0xff<<23 | mant<<13)
	case exp == 0 && mant == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: normalise into float32's wider exponent range
		e := uint32(127 - 15 + 1)
		for mant&0x400 == 0 {
			mant <<= 1
			e--
		}
		mant &= 0x3ff
		return math.Float32frombits(sign | e<<23 | mant<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}

// Float32To16 rounds to the nearest binary16, ties to even, as numpy's
// astype(float16) and ggml's GGML_FP32_TO_FP16 do; overflow gives ±Inf and
// NaN stays NaN.
func Float32To16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff { // Inf or NaN; keep NaN quiet and non-zero
		if mant != 0 {
			return sign | 0x7e00 | uint16(mant>>13)
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	switch {
	case e >= 0x1f:
		return sign | 0x7c00
	case e <= 0:
		// Subnormal or zero: shift the mantissa, with its implicit bit, right.
		if e < -10 {
			return sign
		}
		m := mant | 0x800000
		shift := uint32(14 - e)
		half := uint32(1) << (shift - 1)
		r := m >> shift
		rem := m & (1<<shift - 1)
		if rem > half || (rem == half && r&1 == 1) {
			r++ // may carry into the smallest normal, which is still right
		}
		return sign | uint16(r)
	}
	r := uint32(e)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && r&1 == 1) {
		r++ // a carry into the exponent is correct rounding, up to Inf
	}
	return sign | uint16(r)
}

// Groups is how a block type decomposes: Size elements per scale, whether
// each group has an offset, and the integers' range [Min, Min+2^Bits).
// Super elements (one block) share the float16 factors D and DM; with
// Factored, each group also has small integers A and B, and its scale is
// D·A and its offset DM·B, each rounded to float32 (the K types: a
// super-block of 256 with 6- or 8-bit sub-block scales); without, they are
// D and DM themselves.
type Groups struct {
	Size     int
	Offset   bool
	Bits     int
	Min      int
	Super    int
	Factored bool
}

// Factors is the scales of whole blocks as a file stores them: D and DM
// (nil without offsets) per block, A and B (nil without Factored, B nil
// without offsets) per group.
type Factors struct {
	D, DM []uint16
	A, B  []int8
}

// Scale is a group's float32 scale (or offset) from its block's float16
// factor d and, for the factored types, its integer a: ggml's float32
// product, which the dequantisers form before scaling the integers.
func Scale(d uint16, a int8, factored bool) float32 {
	if !factored {
		return Float16To32(d)
	}
	return float32(Float16To32(d) * float32(a))
}

// GroupValue is ggml's float for integer q of a group with scale s and,
// when the type has offsets, offset o. The conversions stop Go from fusing
// the product and the sum into one FMA, as the C code, compiled without
// contraction, does not.
func GroupValue(q int8, s, o float32, offset bool) float32 {
	v := float32(float32(q) * s)
	if offset {
		v = float32(v + o)
	}
	return v
}
