package gguf

import (
	"encoding/binary"
)

// Dequantisation of the ggml block types that llama.cpp's quantizer writes
// (llama-quantize, Q4_K_M and friends), each block as ggml's
// dequantize_row_* computes it, bit for bit: testdata/ggml-quants holds
// ggml's own output to compare with. Every product and difference is
// rounded to float32 on its own (the explicit conversions stop Go from
// fusing them into an FMA), as the C code, compiled without contraction,
// does.

// blockDecoders dequantise one block of their type into dst (the block's
// elements).
var blockDecoders = map[GGMLType]func(dst []float32, b []byte){
	GGMLTypeQ4_0: decodeQ4_0,
	GGMLTypeQ4_1: decodeQ4_1,
	GGMLTypeQ5_0: decodeQ5_0,
	GGMLTypeQ5_1: decodeQ5_1,
	GGMLTypeQ4_K: decodeQ4K,
	GGMLTypeQ5_K: decodeQ5K,
	GGMLTypeQ6_K: decodeQ6K,
}

func half(b []byte) float32 { return Float16To32(binary.LittleEndian.Uint16(b)) }

// Q4_0: d, then 16 bytes whose low nibbles are elements 0..15 and high
// nibbles 16..31, each (q-8)·d.
func decodeQ4_0(dst []float32, b []byte) {
	d, qs := half(b), b[2:18]
	for j, q := range qs {
		dst[j] = float32(int(q&0xf)-8) * d
		dst[j+16] = float32(int(q>>4)-8) * d
	}
}

// Q4_1: d, m, then nibbles as Q4_0, each q·d + m.
func decodeQ4_1(dst []float32, b []byte) {
	d, m, qs := half(b), half(b[2:]), b[4:20]
	for j, q := range qs {
		dst[j] = float32(float32(q&0xf)*d) + m
		dst[j+16] = float32(float32(q>>4)*d) + m
	}
}

// Q5_0: d, 32 high bits (element j's in bit j), nibbles as Q4_0; (q-16)·d.
func decodeQ5_0(dst []float32, b []byte) {
	d, qh, qs := half(b), binary.LittleEndian.Uint32(b[2:]), b[6:22]
	for j, q := range qs {
		lo := int(q&0xf) | int(qh>>j&1)<<4
		hi := int(q>>4) | int(qh>>(j+16)&1)<<4
		dst[j] = float32(lo-16) * d
		dst[j+16] = float32(hi-16) * d
	}
}

// Q5_1: d, m, high bits and nibbles as Q5_0; q·d + m.
func decodeQ5_1(dst []float32, b []byte) {
	d, m, qh, qs := half(b), half(b[2:]), binary.LittleEndian.Uint32(b[4:]), b[8:24]
	for j, q := range qs {
		lo := q&0xf | byte(qh>>j&1)<<4
		hi := q>>4 | byte(qh>>(j+16)&1)<<4
		dst[j] = float32(float32(lo)*d) + m
		dst[j+16] = float32(float32(hi)*d) + m
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
// then 32 high); each d·sc·q − dmin·m.
func decodeQ4K(dst []float32, b []byte) { decodeK(dst, b[:4], b[4:16], nil, b[16:144]) }

// Q5_K: as Q4_K plus 32 bytes of fifth bits; element l of the k-th 64
// takes bit 2k of qh[l] (low nibble) or bit 2k+1 (high nibble).
func decodeQ5K(dst []float32, b []byte) { decodeK(dst, b[:4], b[4:16], b[16:48], b[48:176]) }

// decodeK is Q4_K and Q5_K: qh nil for the 4-bit type.
func decodeK(dst []float32, dd, scales, qh, qs []byte) {
	d, dmin := half(dd), half(dd[2:])
	for k := range 4 {
		sc1, m1 := scaleMinK4(2*k, scales)
		sc2, m2 := scaleMinK4(2*k+1, scales)
		d1, mm1 := float32(d*float32(sc1)), float32(dmin*float32(m1))
		d2, mm2 := float32(d*float32(sc2)), float32(dmin*float32(m2))
		q, y := qs[32*k:32*k+32], dst[64*k:64*k+64]
		for l, v := range q {
			lo, hi := v&0xf, v>>4
			if qh != nil {
				lo |= (qh[l] >> (2 * k) & 1) << 4
				hi |= (qh[l] >> (2*k + 1) & 1) << 4
			}
			y[l] = float32(d1*float32(lo)) - mm1
			y[l+32] = float32(d2*float32(hi)) - mm2
		}
	}
}

// Q6_K: 128 bytes of low nibbles, 64 of 2-bit highs, 16 int8 scales (one
// per 16 elements), then d; each d·scale·(q−32). Per 128 elements, byte l
// of the lows holds elements l and l+64, byte l+32 elements l+32 and l+96,
// and highs byte l their four top bit pairs.
func decodeQ6K(dst []float32, b []byte) {
	d := half(b[208:])
	for n := range 2 {
		ql, qh, sc := b[64*n:64*n+64], b[128+32*n:128+32*n+32], b[192+8*n:192+8*n+8]
		y := dst[128*n : 128*n+128]
		for l := range 32 {
			is := l / 16
			q1 := int(ql[l]&0xf|(qh[l]>>0&3)<<4) - 32
			q2 := int(ql[l+32]&0xf|(qh[l]>>2&3)<<4) - 32
			q3 := int(ql[l]>>4|(qh[l]>>4&3)<<4) - 32
			q4 := int(ql[l+32]>>4|(qh[l]>>6&3)<<4) - 32
			y[l] = float32(d*float32(int8(sc[is]))) * float32(q1)
			y[l+32] = float32(d*float32(int8(sc[is+2]))) * float32(q2)
			y[l+64] = float32(d*float32(int8(sc[is+4]))) * float32(q3)
			y[l+96] = float32(d*float32(int8(sc[is+6]))) * float32(q4)
		}
	}
}
