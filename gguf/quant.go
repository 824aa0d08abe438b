package gguf

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/llorch/llorch-check/internal/ggmlnum"
)

// Dequantisation of the ggml block types that llama.cpp's quantizer writes
// (llama-quantize, Q4_K_M and friends), each block as ggml's
// dequantize_row_* computes it, bit for bit: testdata/ggml-quants holds
// ggml's own output to compare with.
//
// Every type here is groups of a few consecutive elements sharing a float32
// scale s (and, for the asymmetric types, an offset o) over small integers
// q: ggml computes each element as s·q, rounded, then + o, rounded (the
// scales themselves, d·sc and dmin·m for the K types, rounded first). A
// block decodes to its q, s and o, and GroupValue turns them into ggml's
// float; kernels that keep a model quantised use the same decomposition.

// Groups is how a block type decomposes: Size elements per scale, whether
// each group has an offset, the integers' range and the float16 factors
// they share (ggmlnum.Groups).
type Groups = ggmlnum.Groups

// Factors is the scales of whole blocks as a file stores them
// (ggmlnum.Factors).
type Factors = ggmlnum.Factors

// Scale is a group's float32 scale (or offset) from its block's float16
// factor d and, for the factored types, its integer a: ggml's float32
// product, which the dequantisers form before scaling the integers
// (ggmlnum.Scale).
func Scale(d uint16, a int8, factored bool) float32 { return ggmlnum.Scale(d, a, factored) }

type groupDecoder struct {
	Groups
	// decode fills one block's integers and factors: d, dm, and (for the
	// factored types) a and b per group, dm and b nil without offsets.
	decode func(q []int8, d, dm *uint16, a, b []int8, blk []byte)
}

var groupDecoders = map[GGMLType]groupDecoder{
	GGMLTypeQ8_0: {Groups{Size: 32, Offset: false, Bits: 8, Min: -128, Super: 32, Factored: false}, decodeQ8_0},
	GGMLTypeQ4_0: {Groups{Size: 32, Offset: false, Bits: 4, Min: -8, Super: 32, Factored: false}, decodeQ4_0},
	GGMLTypeQ4_1: {Groups{Size: 32, Offset: true, Bits: 4, Min: 0, Super: 32, Factored: false}, decodeQ4_1},
	GGMLTypeQ5_0: {Groups{Size: 32, Offset: false, Bits: 5, Min: -16, Super: 32, Factored: false}, decodeQ5_0},
	GGMLTypeQ5_1: {Groups{Size: 32, Offset: true, Bits: 5, Min: 0, Super: 32, Factored: false}, decodeQ5_1},
	GGMLTypeQ4_K: {Groups{Size: 32, Offset: true, Bits: 4, Min: 0, Super: 256, Factored: true}, decodeQ4K},
	GGMLTypeQ5_K: {Groups{Size: 32, Offset: true, Bits: 5, Min: 0, Super: 256, Factored: true}, decodeQ5K},
	GGMLTypeQ6_K: {Groups{Size: 16, Offset: false, Bits: 6, Min: -32, Super: 256, Factored: true}, decodeQ6K},
}

// GroupsOf says how type t decomposes; false for the float types.
func GroupsOf(t GGMLType) (Groups, bool) {
	g, ok := groupDecoders[t]
	return g.Groups, ok
}

// GroupValue is ggml's float for integer q of a group with scale s and,
// when the type has offsets, offset o, each step rounded to float32, never
// fused (ggmlnum.GroupValue).
func GroupValue(q int8, s, o float32, offset bool) float32 {
	return ggmlnum.GroupValue(q, s, o, offset)
}

// DecodeFactors decodes raw, whole blocks of type t, into each element's
// integer q and the blocks' factors f, sized as Factors says: Scale of
// them gives DecodeGroups' scales and offsets, bit for bit.
func DecodeFactors(t GGMLType, raw []byte, q []int8, f Factors) error {
	g, ok := groupDecoders[t]
	if !ok {
		return fmt.Errorf("gguf: %s is not a block type of integer groups", t)
	}
	want, err := byteLen(t, len(q))
	if err != nil {
		return err
	}
	if len(raw) != want {
		return fmt.Errorf("gguf: %s data is %d bytes, %d elements need %d", t, len(raw), len(q), want)
	}
	blocks, groups := len(q)/g.Super, len(q)/g.Size
	if len(f.D) != blocks || (g.Offset && len(f.DM) != blocks) {
		return fmt.Errorf("gguf: %d elements of %s need %d block factors (and as many offset factors if it has offsets), have %d and %d", len(q), t, blocks, len(f.D), len(f.DM))
	}
	if g.Factored && (len(f.A) != groups || (g.Offset && len(f.B) != groups)) {
		return fmt.Errorf("gguf: %d elements of %s need %d group factors (and as many offset factors if it has offsets), have %d and %d", len(q), t, groups, len(f.A), len(f.B))
	}
	size, per := int(layouts[t].typeSize), g.Super/g.Size
	if t == GGMLTypeQ8_0 {
		// The integers are the block's bytes: one copy a block, not a
		// call and a conversion an element (a fifth of a Q8_0 load).
		bytes := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(q))), len(q))
		for i := range blocks {
			blk := raw[i*size : (i+1)*size]
			f.D[i] = half(blk)
			copy(bytes[i*32:(i+1)*32], blk[2:])
		}
		return nil
	}
	for i := range blocks {
		var dm *uint16
		var a, b []int8
		if g.Offset {
			dm = &f.DM[i]
		}
		if g.Factored {
			a = f.A[i*per : (i+1)*per]
			if g.Offset {
				b = f.B[i*per : (i+1)*per]
			}
		}
		g.decode(q[i*g.Super:(i+1)*g.Super], &f.D[i], dm, a, b, raw[i*size:(i+1)*size])
	}
	return nil
}

// DecodeGroups decodes raw, whole blocks of type t, into each element's
// integer q, each group's scale s and, if the type has offsets, offset o
// (nil otherwise): GroupValue of them is DecodeFloat32's value, bit for bit.
func DecodeGroups(t GGMLType, raw []byte, q []int8, s, o []float32) error {
	g, ok := groupDecoders[t]
	if !ok {
		return fmt.Errorf("gguf: %s is not a block type of integer groups", t)
	}
	if len(s) != len(q)/g.Size || (g.Offset && len(o) != len(s)) {
		return fmt.Errorf("gguf: %d elements of %s need %d scales (and as many offsets if it has them), have %d and %d", len(q), t, len(q)/g.Size, len(s), len(o))
	}
	f := newFactors(g.Groups, len(q))
	if err := DecodeFactors(t, raw, q, f); err != nil {
		return err
	}
	scales(f, g.Groups, s, o)
	return nil
}

// newFactors sizes Factors for n elements of groups g.
func newFactors(g Groups, n int) Factors {
	f := Factors{D: make([]uint16, n/g.Super)}
	if g.Offset {
		f.DM = make([]uint16, n/g.Super)
	}
	if g.Factored {
		f.A = make([]int8, n/g.Size)
		if g.Offset {
			f.B = make([]int8, n/g.Size)
		}
	}
	return f
}

// scales forms each group's scale (and offset) from f.
func scales(f Factors, g Groups, s, o []float32) {
	per := g.Super / g.Size
	for i := range s {
		var a, b int8
		if g.Factored {
			a = f.A[i]
			if g.Offset {
				b = f.B[i]
			}
		}
		s[i] = Scale(f.D[i/per], a, g.Factored)
		if g.Offset {
			o[i] = Scale(f.DM[i/per], b, g.Factored)
		}
	}
}

// decodeBlocks is DecodeFloat32 for the group types: raw has been checked
// to hold len(dst) elements.
func decodeBlocks(t GGMLType, raw []byte, dst []float32) {
	g, l := groupDecoders[t], layouts[t]
	n, size := int(l.blockSize), int(l.typeSize)
	q := make([]int8, n)
	f := newFactors(g.Groups, n)
	s, o := make([]float32, n/g.Size), make([]float32, n/g.Size)
	for b := 0; b < len(dst)/n; b++ {
		var dm *uint16
		if g.Offset {
			dm = &f.DM[0]
		}
		g.decode(q, &f.D[0], dm, f.A, f.B, raw[b*size:(b+1)*size])
		scales(f, g.Groups, s, o)
		out := dst[b*n : (b+1)*n]
		for i, v := range q {
			out[i] = GroupValue(v, s[i/g.Size], o[i/g.Size], g.Offset)
		}
	}
}

func half(b []byte) uint16 { return binary.LittleEndian.Uint16(b) }

// Q8_0: d, then 32 int8, each q·d.
func decodeQ8_0(q []int8, d, _ *uint16, _, _ []int8, b []byte) {
	*d = half(b)
	for j := range q {
		q[j] = int8(b[2+j])
	}
}

// Q4_0: d, then 16 bytes whose low nibbles are elements 0..15 and high
// nibbles 16..31, each (q-8)·d.
func decodeQ4_0(q []int8, d, _ *uint16, _, _ []int8, b []byte) {
	*d = half(b)
	for j, v := range b[2:18] {
		q[j], q[j+16] = int8(v&0xf)-8, int8(v>>4)-8
	}
}

// Q4_1: d, m, then nibbles as Q4_0, each q·d + m.
func decodeQ4_1(q []int8, d, m *uint16, _, _ []int8, b []byte) {
	*d, *m = half(b), half(b[2:])
	for j, v := range b[4:20] {
		q[j], q[j+16] = int8(v&0xf), int8(v>>4)
	}
}

// Q5_0: d, 32 high bits (element j's in bit j), nibbles as Q4_0; (q-16)·d.
func decodeQ5_0(q []int8, d, _ *uint16, _, _ []int8, b []byte) {
	*d = half(b)
	qh := binary.LittleEndian.Uint32(b[2:])
	for j, v := range b[6:22] {
		q[j] = int8(v&0xf|byte(qh>>j&1)<<4) - 16
		q[j+16] = int8(v>>4|byte(qh>>(j+16)&1)<<4) - 16
	}
}

// Q5_1: d, m, high bits and nibbles as Q5_0; q·d + m.
func decodeQ5_1(q []int8, d, m *uint16, _, _ []int8, b []byte) {
	*d, *m = half(b), half(b[2:])
	qh := binary.LittleEndian.Uint32(b[4:])
	for j, v := range b[8:24] {
		q[j] = int8(v&0xf | byte(qh>>j&1)<<4)
		q[j+16] = int8(v>>4 | byte(qh>>(j+16)&1)<<4)
	}
}

// scaleMinK4 unpacks sub-block j's 6-bit scale and min from the 12 bytes
// Q4_K and Q5_K share: j < 4 in the low 6 bits of bytes j and j+4; above,
// 4 bits in byte j+4 and the top 2 bits of bytes j-4 and j.
func scaleMinK4(j int, s []byte) (sc, m byte) {
	if j < 4 {
		return s[j] & 63, s[j+4] & 63
	}
	return s[j+4]&0xf | (s[j-4]>>6)<<4, s[j+4]>>4 | (s[j]>>6)<<4
}

// Q4_K: a super-block of 256 = 8 sub-blocks of 32; d, dmin, 12 bytes of
// scales and mins, 128 bytes of nibbles (per 64 elements, 32 low nibbles
// then 32 high); each (d·sc)·q − dmin·m. The offset's factor is −m, since
// −(dmin·m) rounds as dmin·(−m) does.
func decodeQ4K(q []int8, d, dm *uint16, a, b []int8, blk []byte) {
	decodeK(q, d, dm, a, b, blk[:4], blk[4:16], nil, blk[16:144])
}

// Q5_K: as Q4_K plus 32 bytes of fifth bits; element l of the k-th 64
// takes bit 2k of qh[l] (low nibble) or bit 2k+1 (high nibble).
func decodeQ5K(q []int8, d, dm *uint16, a, b []int8, blk []byte) {
	decodeK(q, d, dm, a, b, blk[:4], blk[4:16], blk[16:48], blk[48:176])
}

// decodeK is Q4_K and Q5_K: qh nil for the 4-bit type.
func decodeK(q []int8, d, dm *uint16, a, b []int8, dd, scales, qh, qs []byte) {
	*d, *dm = half(dd), half(dd[2:])
	for j := range 8 {
		sc, m := scaleMinK4(j, scales)
		a[j], b[j] = int8(sc), -int8(m)
	}
	for k := range 4 {
		y := q[64*k : 64*k+64]
		for l, v := range qs[32*k : 32*k+32] {
			lo, hi := v&0xf, v>>4
			if qh != nil {
				lo |= (qh[l] >> (2 * k) & 1) << 4
				hi |= (qh[l] >> (2*k + 1) & 1) << 4
			}
			y[l], y[l+32] = int8(lo), int8(hi)
		}
	}
}

// Q6_K: 128 bytes of low nibbles, 64 of 2-bit highs, 16 int8 scales (one
// per 16 elements), then d; each (d·scale)·(q−32). Per 128 elements, byte
// l of the lows holds elements l and l+64, byte l+32 elements l+32 and
// l+96, and highs byte l their four top bit pairs.
func decodeQ6K(q []int8, d, _ *uint16, a, _ []int8, b []byte) {
	*d = half(b[208:])
	for j, sc := range b[192:208] {
		a[j] = int8(sc)
	}
	for n := range 2 {
		ql, qh := b[64*n:64*n+64], b[128+32*n:128+32*n+32]
		y := q[128*n : 128*n+128]
		for l := range 32 {
			y[l] = int8(ql[l]&0xf|(qh[l]>>0&3)<<4) - 32
			y[l+32] = int8(ql[l+32]&0xf|(qh[l]>>2&3)<<4) - 32
			y[l+64] = int8(ql[l]>>4|(qh[l]>>4&3)<<4) - 32
			y[l+96] = int8(ql[l+32]>>4|(qh[l]>>6&3)<<4) - 32
		}
	}
}
