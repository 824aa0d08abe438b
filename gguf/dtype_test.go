package gguf

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every binary16 value converts to float32 and back to itself.
func TestFloat16RoundTripExhaustive(t *testing.T) {
	for h := range 1 << 16 {
		f := Float16To32(uint16(h))
		got := Float32To16(f)
		if math.IsNaN(float64(f)) {
			require.True(t, math.IsNaN(float64(Float16To32(got))), "NaN %#04x", h)
			continue
		}
		require.Equal(t, uint16(h), got, "%#04x (%g)", h, f)
	}
}

// Float32To16 picks the nearest binary16, ties to the even one.
func TestFloat32To16Rounding(t *testing.T) {
	cases := []struct {
		in   float32
		want uint16
	}{
		{1, 0x3c00},
		{1 + 1.0/2048, 0x3c00},                // tie between 0x3c00 and 0x3c01: even
		{1 + 3.0/2048, 0x3c02},                // tie between 0x3c01 and 0x3c02: even
		{65504, 0x7bff},                       // largest finite
		{65520, 0x7c00},                       // halfway to the next power: rounds to Inf
		{float32(math.Ldexp(1, -24)), 0x0001}, // smallest subnormal
		{float32(math.Ldexp(1, -25)), 0x0000}, // tie with zero: even
		{float32(math.Ldexp(3, -26)), 0x0001},
		{float32(math.Inf(-1)), 0xfc00},
		{-0.0, 0x0000},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, Float32To16(c.in), "%g", c.in)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		x := float32(rng.NormFloat64() * math.Pow(10, rng.Float64()*8-6))
		h := Float32To16(x)
		err := math.Abs(float64(Float16To32(h)) - float64(x))
		for _, n := range []uint16{h - 1, h + 1} {
			if v := Float16To32(n); !math.IsInf(float64(v), 0) && (n^h)&0x8000 == 0 {
				require.LessOrEqual(t, err, math.Abs(float64(v)-float64(x)), "%g -> %#04x, but %#04x is nearer", x, h, n)
			}
		}
	}
}

// One block with a known answer, worked out by hand from ggml's
// quantize_row_q8_0_ref: d = 127/127 = 1, so q = round(x) (half away from 0).
func TestQ8_0KnownBlock(t *testing.T) {
	x := make([]float32, 32)
	x[0], x[1], x[2], x[3] = 127, -2.5, 0.5, -127
	raw, err := EncodeFloat32(GGMLTypeQ8_0, x)
	require.NoError(t, err)
	require.Len(t, raw, 34)
	assert.Equal(t, uint16(0x3c00), binary.LittleEndian.Uint16(raw), "scale 1.0")
	assert.Equal(t, []byte{127, byte(0xfd), 1, 0x81}, raw[2:6])
	back := make([]float32, 32)
	require.NoError(t, DecodeFloat32(GGMLTypeQ8_0, raw, back))
	assert.Equal(t, []float32{127, -3, 1, -127}, back[:4])

	zero, err := EncodeFloat32(GGMLTypeQ8_0, make([]float32, 32))
	require.NoError(t, err)
	assert.Equal(t, make([]byte, 34), zero, "an all-zero block has scale 0")
}

// Q8_0 error is at most half a step of the block's scale (plus the scale's
// own float16 rounding).
func TestQ8_0ErrorBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	x := make([]float32, 32*64)
	for i := range x {
		x[i] = float32(rng.NormFloat64() * 0.02)
	}
	raw, err := EncodeFloat32(GGMLTypeQ8_0, x)
	require.NoError(t, err)
	back := make([]float32, len(x))
	require.NoError(t, DecodeFloat32(GGMLTypeQ8_0, raw, back))
	for b := 0; b < len(x)/32; b++ {
		var amax float64
		for _, v := range x[b*32 : (b+1)*32] {
			amax = math.Max(amax, math.Abs(float64(v)))
		}
		step := amax / 127
		for j := b * 32; j < (b+1)*32; j++ {
			require.LessOrEqual(t, math.Abs(float64(back[j]-x[j])), 0.5*step+amax*1e-3, "element %d", j)
		}
	}
}

func TestConvertRoundTripAndErrors(t *testing.T) {
	x := []float32{0, 1, -2.5, 65504}
	for _, typ := range []GGMLType{GGMLTypeF32, GGMLTypeF16} {
		raw, err := EncodeFloat32(typ, x)
		require.NoError(t, err)
		back := make([]float32, len(x))
		require.NoError(t, DecodeFloat32(typ, raw, back))
		assert.Equal(t, x, back, typ.String())
	}
	bf := []byte{0x80, 0x3f} // bfloat16 1.0
	one := make([]float32, 1)
	require.NoError(t, DecodeFloat32(GGMLTypeBF16, bf, one))
	assert.Equal(t, float32(1), one[0])

	_, err := EncodeFloat32(GGMLTypeQ4_0, x)
	assert.ErrorContains(t, err, "Q4_0 is not supported")
	_, err = EncodeFloat32(GGMLTypeQ8_0, x)
	assert.ErrorContains(t, err, "4 elements are not whole Q8_0 blocks")
	assert.ErrorContains(t, DecodeFloat32(GGMLTypeF16, []byte{1, 2, 3}, one), "F16 data is 3 bytes, 1 elements need 2")
}

// BF16 rounds as ggml's ggml_compute_fp32_to_bf16: nearest, ties to even,
// NaNs kept quiet NaNs; DecodeFloat32 reads the bits back.
func TestFloat32ToBF16(t *testing.T) {
	tests := []struct {
		in   uint32
		want uint16
	}{
		{0x3f800000, 0x3f80}, // 1
		{0xbf800000, 0xbf80}, // -1
		{0x3f808000, 0x3f80}, // tie, even below
		{0x3f818000, 0x3f82}, // tie, even above
		{0x3f808001, 0x3f81}, // above the tie
		{0x7f7fffff, 0x7f80}, // max float32 rounds to infinity
		{0x7f800000, 0x7f80}, // +inf
		{0x7f800001, 0x7fc0}, // signalling NaN made quiet, not infinity
		{0xffc00001, 0xffc0}, // negative quiet NaN
		{0x00000001, 0x0000}, // smallest subnormal rounds to zero
	}
	for _, tc := range tests {
		got := Float32ToBF16(math.Float32frombits(tc.in))
		assert.Equalf(t, tc.want, got, "%#08x", tc.in)
	}
	src := []float32{1, -2.5, 3.140625, 0}
	raw, err := EncodeFloat32(GGMLTypeBF16, src)
	require.NoError(t, err)
	back := make([]float32, len(src))
	require.NoError(t, DecodeFloat32(GGMLTypeBF16, raw, back))
	assert.Equal(t, src, back, "values bfloat16 holds exactly round-trip")
}
