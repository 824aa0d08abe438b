package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWidenBF16Exhaustive widens every bfloat16 bit pattern, through the
// vector kernel and its generic edges (rows of 1000 of a 1003-wide
// source), to exactly the float32 whose top half it is: NaNs, signalling
// ones included, keep every bit (a shift, not a conversion).
func TestWidenBF16Exhaustive(t *testing.T) {
	const lds, n = 1003, 1000
	rows := (1<<16 + n - 1) / n
	src := make([]uint16, rows*lds)
	want := make([]uint32, rows*n)
	for i := range 1 << 16 {
		r, j := i/n, i%n
		src[r*lds+j] = uint16(i)
		want[r*n+j] = uint32(i) << 16
	}
	got := make([]float32, rows*n)
	bfloat16.widen(got, src, lds, rows, n)
	for i, g := range got {
		require.Equal(t, want[i], math.Float32bits(g), "element %d", i)
	}
}

// TestSlabbedHalfSameBitsAsFloat32: float16 and bfloat16 matrices in the
// layouts the model holds (slabs of the matrix, of an [out,in] weight's
// transpose, and of the LM head's transpose) give, on every product path
// (decode's slab kernel, the slab panels up to 8 rows, prefill's tiles
// over gathered blocks, ragged last slabs, serial and parallel), the bits
// of float32 matrices of the same values in the same layout.
func TestSlabbedHalfSameBitsAsFloat32(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, s := range []struct{ M, K, N int }{
		{1, 3, 17}, {1, 768, 2304}, {1, 3072, 768}, {2, 300, 515}, {3, 64, 64}, {4, 257, 200},
		{5, 132, 97}, {8, 768, 768}, {9, 257, 100}, {13, 258, 531}, {128, 96, 384},
	} {
		for _, f := range forms {
			t.Run(fmt.Sprintf("%s/%dx%dx%d", f.name, s.M, s.K, s.N), func(t *testing.T) {
				w16, vals := halfMatrixOf(r, f.h, s.K*s.N)
				x := randSlice(r, s.M*s.K)
				product := func(mk func(Matrix) (Matrix, error), mul func(dst []float32, w Matrix)) (got, want []float32) {
					a, err := mk(clone(w16))
					require.NoError(t, err)
					b, err := mk(Float32(slices.Clone(vals)))
					require.NoError(t, err)
					got = randSlice(r, s.M*s.N)
					want = slices.Clone(got)
					mul(got, a)
					mul(want, b)
					return got, want
				}
				acc := func(dst []float32, w Matrix) { MatMulAcc(dst, x, w, s.M, s.K, s.N) }
				// w16 as [K,N]: slabs of itself.
				got, want := product(func(w Matrix) (Matrix, error) { return Slabbed(w, s.K, s.N) }, acc)
				require.Equal(t, want, got, "Slabbed")
				// w16 as an [out,in] = [N,K] weight: the slabs of its transpose.
				got, want = product(func(w Matrix) (Matrix, error) { return SlabbedRows(w, s.N, s.K) }, acc)
				require.Equal(t, want, got, "SlabbedRows")
				// w16 as an LM head [V,C] = [N,K], read by MatMulT.
				got, want = product(func(w Matrix) (Matrix, error) { return SlabbedT(w, s.N, s.K) },
					func(dst []float32, w Matrix) { MatMulT(dst, x, w, s.M, s.K, s.N) })
				require.Equal(t, want, got, "SlabbedT")
			})
		}
	}
}

// TestBFloat16Matrix: a bfloat16 matrix's size, values, rows and bits in
// every layout, and that its bits are never taken for float16 ones.
func TestBFloat16Matrix(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 44))
	const rows, cols = 70, 130
	w, vals := halfMatrixOf(r, bfloat16, rows*cols)
	bits := slices.Clone(w.h16)
	slabbed, err := Slabbed(clone(w), rows, cols)
	require.NoError(t, err)
	slabbedT, err := SlabbedT(clone(w), rows, cols)
	require.NoError(t, err)
	for name, m := range map[string]Matrix{"row-major": w, "slabs": slabbed, "slabs of the transpose": slabbedT} {
		require.Equal(t, rows*cols, m.Len(), name)
		require.EqualValues(t, 2*rows*cols, m.Bytes(), name)
		require.Equal(t, vals, m.Float32s(), name)
		require.Equal(t, bits, m.BFloat16Bits(), name)
		require.Nil(t, m.Float16Bits(), name)
		require.True(t, m.isHalf(), name)
		require.Equal(t, vals[5*cols:6*cols], m.Row(make([]float32, cols), 5, cols), name)
	}
	require.Nil(t, Float16(bits).BFloat16Bits())
}
