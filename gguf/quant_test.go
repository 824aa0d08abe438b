package gguf

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// ggmlVectors reads testdata/ggml-quants/<type>.bin, written by ggml's own
// quantizer and dequantizer (cmd/llamacpp-ggml vectors): the input
// rows, ggml's blocks of them and ggml's dequantisation of the blocks.
func ggmlVectors(t *testing.T, typ GGMLType) (src []float32, blocks []byte, want []float32) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "ggml-quants", typ.String()+".bin"))
	require.NoError(t, err)
	rows, cols := binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:])
	b = b[8:]
	var parts [][]byte
	for range 3 {
		n := binary.LittleEndian.Uint32(b)
		parts, b = append(parts, b[4:4+n]), b[4+n:]
	}
	floats := func(p []byte) []float32 {
		v := make([]float32, len(p)/4)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(p[4*i:]))
		}
		return v
	}
	src, want = floats(parts[0]), floats(parts[2])
	require.Len(t, src, int(rows*cols))
	return src, parts[1], want
}

// TestDequantizeMatchesGGML: every block type llorch-check reads gives
// ggml's dequantize_row_* bits on ggml's own blocks.
func TestDequantizeMatchesGGML(t *testing.T) {
	for _, typ := range []GGMLType{GGMLTypeQ4_0, GGMLTypeQ4_1, GGMLTypeQ5_0, GGMLTypeQ5_1,
		GGMLTypeQ8_0, GGMLTypeQ4_K, GGMLTypeQ5_K, GGMLTypeQ6_K} {
		t.Run(typ.String(), func(t *testing.T) {
			src, blocks, want := ggmlVectors(t, typ)
			got := make([]float32, len(want))
			require.NoError(t, DecodeFloat32(typ, blocks, got))
			for i := range want {
				require.Equal(t, math.Float32bits(want[i]), math.Float32bits(got[i]),
					"element %d: got %g, ggml %g (input %g)", i, got[i], want[i], src[i])
			}
			require.Error(t, DecodeFloat32(typ, blocks[1:], got), "a short block is an error")
			// The vectors are a quantisation of src, not noise: every row's
			// error is well under its scale.
			cols := len(src) / 8
			for r := range 7 {
				var scale, worst float64
				for j := r * cols; j < (r+1)*cols; j++ {
					scale = max(scale, math.Abs(float64(src[j])))
					worst = max(worst, math.Abs(float64(src[j]-want[j])))
				}
				require.Less(t, worst, scale/4, "row %d", r)
			}
		})
	}
}

// TestQ8_0EncodeMatchesGGML: convert's Q8_0 blocks are ggml's quantizer's.
func TestQ8_0EncodeMatchesGGML(t *testing.T) {
	src, blocks, _ := ggmlVectors(t, GGMLTypeQ8_0)
	got, err := EncodeFloat32(GGMLTypeQ8_0, src)
	require.NoError(t, err)
	require.Equal(t, blocks, got)
}

// FuzzDecodeFloat32: any bytes of any readable type decode without a
// panic, into exactly the elements their size allows, or fail cleanly.
func FuzzDecodeFloat32(f *testing.F) {
	for _, typ := range []GGMLType{GGMLTypeQ4_0, GGMLTypeQ5_1, GGMLTypeQ4_K, GGMLTypeQ5_K, GGMLTypeQ6_K} {
		b, err := os.ReadFile(filepath.Join("..", "testdata", "ggml-quants", typ.String()+".bin"))
		require.NoError(f, err)
		f.Add(uint8(typ), b[8+4+8*512*4+4:][:2*int(layouts[typ].typeSize)])
	}
	f.Add(uint8(GGMLTypeF16), []byte{0, 0x7c, 1, 2})
	f.Fuzz(func(t *testing.T, typ uint8, raw []byte) {
		tt := GGMLType(typ)
		if !Decodable(tt) {
			return
		}
		l := layouts[tt]
		n := len(raw) / int(l.typeSize) * int(l.blockSize)
		dst := make([]float32, n)
		err := DecodeFloat32(tt, raw, dst)
		if len(raw)%int(l.typeSize) == 0 {
			require.NoError(t, err)
		} else {
			require.Error(t, err)
		}
	})
}

// TestDecodeGroupsMatchesFloats: the integers, scales and offsets that
// quantised kernels keep give, element by element, DecodeFloat32's bits
// on ggml's blocks (which TestDequantizeMatchesGGML ties to ggml).
func TestDecodeGroupsMatchesFloats(t *testing.T) {
	for _, typ := range []GGMLType{GGMLTypeQ4_0, GGMLTypeQ4_1, GGMLTypeQ5_0, GGMLTypeQ5_1,
		GGMLTypeQ8_0, GGMLTypeQ4_K, GGMLTypeQ5_K, GGMLTypeQ6_K} {
		t.Run(typ.String(), func(t *testing.T) {
			_, blocks, want := ggmlVectors(t, typ)
			g, ok := GroupsOf(typ)
			require.True(t, ok)
			q, s := make([]int8, len(want)), make([]float32, len(want)/g.Size)
			var o []float32
			if g.Offset {
				o = make([]float32, len(s))
			}
			require.NoError(t, DecodeGroups(typ, blocks, q, s, o))
			for i, v := range q {
				require.True(t, int(v) >= g.Min && int(v) < g.Min+1<<g.Bits, "element %d: %d outside %d bits from %d", i, v, g.Bits, g.Min)
			}
			for i := range want {
				var off float32
				if g.Offset {
					off = o[i/g.Size]
				}
				got := GroupValue(q[i], s[i/g.Size], off, g.Offset)
				require.Equal(t, math.Float32bits(want[i]), math.Float32bits(got), "element %d", i)
			}
			require.Error(t, DecodeGroups(typ, blocks[1:], q, s, o), "short data")
			require.Error(t, DecodeGroups(typ, blocks, q, s[1:], o), "too few scales")
			if g.Offset {
				require.Error(t, DecodeGroups(typ, blocks, q, s, nil), "no offsets")
			}
		})
	}
	_, ok := GroupsOf(GGMLTypeF16)
	require.False(t, ok)
	require.Error(t, DecodeGroups(GGMLTypeF32, make([]byte, 4), make([]int8, 1), nil, nil))
}

// TestDecodeFactorsSizes: DecodeFactors names what is short: the data,
// the block factors, the group factors.
func TestDecodeFactorsSizes(t *testing.T) {
	_, blocks, want := ggmlVectors(t, GGMLTypeQ4_K)
	g, _ := GroupsOf(GGMLTypeQ4_K)
	q := make([]int8, len(want))
	full := newFactors(g, len(q))
	require.NoError(t, DecodeFactors(GGMLTypeQ4_K, blocks, q, full))
	for _, c := range []struct {
		name string
		f    Factors
		want string
	}{
		{"one block factor short", Factors{D: full.D[1:], DM: full.DM, A: full.A, B: full.B}, "block factors"},
		{"no offset factors", Factors{D: full.D, A: full.A, B: full.B}, "block factors"},
		{"one group factor short", Factors{D: full.D, DM: full.DM, A: full.A[1:], B: full.B}, "group factors"},
		{"no group offset factors", Factors{D: full.D, DM: full.DM, A: full.A}, "group factors"},
	} {
		require.ErrorContains(t, DecodeFactors(GGMLTypeQ4_K, blocks, q, c.f), c.want, c.name)
	}
	require.ErrorContains(t, DecodeFactors(GGMLTypeQ4_K, blocks[1:], q, full), "bytes")
	require.Error(t, DecodeFactors(GGMLTypeF16, blocks, q, full))
}
