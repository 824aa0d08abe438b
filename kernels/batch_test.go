package kernels

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMatMulBatch: every product of a batch gets MatMulBias's bits, alone,
// whatever it shares: quantised matrices of one type on the same X (one
// split of its rows), of two types on the same X (two), the same X's
// rows cut shorter and another X of its shape (their own), float32, float16 and slabbed matrices, empty
// products, and products narrow and wide enough to be shared out in
// column chunks.
func TestMatMulBatch(t *testing.T) {
	r := rand.New(rand.NewPCG(45, 1))
	quant := func(K, N int, offset bool, bits int) Matrix {
		for _, c := range typeCases {
			if c.offset == offset && c.bits.Bits == bits {
				return randomQuant(r, N, K, 32, offset, c.bits).matrix(t, false)
			}
		}
		t.Fatalf("no type case of %d bits, offset %t", bits, offset)
		return Matrix{}
	}
	half := func(K, N int) Matrix {
		b := make([]uint16, K*N)
		for i := range b {
			b[i] = uint16(0x3c00 ^ r.IntN(0x3ff) ^ r.IntN(2)<<15 ^ r.IntN(4)<<11)
		}
		return Float16(b)
	}
	slabbed := func(K, N int) Matrix {
		m, err := Slabbed(Float32(randSlice(r, K*N)), K, N)
		require.NoError(t, err)
		return m
	}
	x8, x8b, x3, x1 := randSlice(r, 8*256), randSlice(r, 8*256), randSlice(r, 3*256), randSlice(r, 13*96)
	x8[40] = float32(math.NaN()) // a group whose scale is NaN
	for k := 64; k < 96; k++ {   // a group of zeros
		x3[k] = 0
	}
	type prod struct {
		x       []float32
		w       Matrix
		M, K, N int
	}
	batch := []prod{
		{x8, quant(256, 515, true, 4), 8, 256, 515},
		{x8, quant(256, 515, true, 4), 8, 256, 515}, // shares the first's split
		{x8, quant(256, 100, false, 6), 8, 256, 100},
		{x8[:4*256], quant(256, 64, true, 4), 4, 256, 64},
		{x8b, quant(256, 96, true, 4), 8, 256, 96}, // another X, cut alike
		{x3, quant(256, 200, false, 8), 3, 256, 200},
		{x3, Float32(randSlice(r, 256*33)), 3, 256, 33},
		{x1, half(96, 400), 13, 96, 400},
		{x1, slabbed(96, 130), 13, 96, 130},
		{x1[:0], quant(96, 64, true, 5), 0, 96, 64},
		{x1[:96], quant(96, 1000, true, 5), 1, 96, 1000},
	}
	ps := make([]Product, len(batch))
	for i, b := range batch {
		dst := randSlice(r, b.M*b.N) // stale: the batch sets every value
		ps[i] = Product{Dst: dst, X: b.x, W: b.w, M: b.M, K: b.K, N: b.N}
	}
	MatMulBatch(ps)
	for i, b := range batch {
		want := randSlice(r, b.M*b.N)
		MatMulBias(want, b.x, b.w, nil, b.M, b.K, b.N)
		for j := range want {
			if math.Float32bits(want[j]) != math.Float32bits(ps[i].Dst[j]) && !(want[j] != want[j] && ps[i].Dst[j] != ps[i].Dst[j]) {
				t.Fatalf("product %d [%d]: %g, want %g", i, j, ps[i].Dst[j], want[j])
			}
		}
	}
}

// TestAddScaled: each product is rounded to float32 before it is added
// (PyTorch's y·w then index_add_), at every length around the vector
// width; a fused multiply-add gives other bits for some of these values.
func TestAddScaled(t *testing.T) {
	r := rand.New(rand.NewPCG(45, 2))
	fusedDiffers := false
	for _, n := range []int{0, 1, 15, 16, 17, 31, 32, 33, 100, 2048} {
		dst, src, s := randSlice(r, n+3), randSlice(r, n), float32(r.NormFloat64())
		got := slices.Clone(dst)
		AddScaled(got, src, s)
		for i := range src {
			want := dst[i] + float32(src[i]*s)
			require.Equal(t, math.Float32bits(want), math.Float32bits(got[i]), "n=%d [%d]", n, i)
			fused := float32(math.FMA(float64(src[i]), float64(s), float64(dst[i])))
			fusedDiffers = fusedDiffers || fused != want
		}
		require.Equal(t, dst[n:], got[n:], "n=%d: past the end", n)
	}
	require.True(t, fusedDiffers, "no value tells a fused sum from the rounded one")
}
