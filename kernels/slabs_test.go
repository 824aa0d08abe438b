package kernels

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSlabbedSameBits: a slabbed matrix gives, on every kernel path
// (panel and tile, serial and parallel, ragged last slab), the bits of the
// row-major matrix it was made from, float32 and float16. From 4 to 8 rows
// the slabs take the panel path and row-major the tiles, which agree when
// K is a multiple of 4 (matmulCols), so those shapes have such a K.
func TestSlabbedSameBits(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, s := range []struct{ M, K, N int }{
		{1, 3, 17}, {1, 768, 2304}, {2, 300, 515}, {3, 64, 64}, {1, 3072, 768},
		{4, 256, 200}, {5, 132, 97}, {8, 768, 768}, {9, 257, 100}, {13, 258, 531}, {128, 96, 384},
	} {
		w16, _ := halfMatrix(r, s.K*s.N)
		for _, w := range []struct {
			name string
			m    Matrix
		}{{"f32", Float32(randSlice(r, s.K*s.N))}, {"f16", w16}} {
			t.Run(fmt.Sprintf("%s/%dx%dx%d", w.name, s.M, s.K, s.N), func(t *testing.T) {
				slabbed, err := Slabbed(clone(w.m), s.K, s.N)
				require.NoError(t, err)
				require.Equal(t, w.m.Float32s(), slabbed.Float32s())
				require.Equal(t, w.m.Float16Bits(), slabbed.Float16Bits())
				x := randSlice(r, s.M*s.K)
				got, want := randSlice(r, s.M*s.N), make([]float32, s.M*s.N)
				copy(want, got)
				MatMulAcc(got, x, slabbed, s.M, s.K, s.N)
				MatMulAcc(want, x, w.m, s.M, s.K, s.N)
				require.Equal(t, want, got)
			})
		}
	}
}

func TestSlabbedErrors(t *testing.T) {
	_, err := Slabbed(Float32(make([]float32, 12)), 5, 3)
	require.ErrorContains(t, err, "12-element matrix as 5x3")
	require.Panics(t, func() {
		w, _ := Slabbed(Float32(make([]float32, 12)), 4, 3)
		MatMulAcc(make([]float32, 4), make([]float32, 3), w, 1, 3, 4)
	})
}

// clone copies a float32 or float16 matrix, which Slabbed takes over.
func clone(w Matrix) Matrix {
	return Matrix{f32: slices.Clone(w.f32), f16: slices.Clone(w.f16)}
}

// TestTransposeBlocks checks the in-place block transpose against a copy,
// on square, wide, tall and single-row shapes.
func TestTransposeBlocks(t *testing.T) {
	for _, s := range []struct{ R, C, b int }{{1, 5, 3}, {5, 1, 2}, {2, 2, 1}, {3, 7, 4}, {12, 36, 64}, {48, 12, 64}, {7, 3, 1}} {
		a := make([]int, s.R*s.C*s.b)
		for i := range a {
			a[i] = i
		}
		want := make([]int, len(a))
		for r := range s.R {
			for c := range s.C {
				copy(want[(c*s.R+r)*s.b:][:s.b], a[(r*s.C+c)*s.b:])
			}
		}
		transposeBlocks(a, s.R, s.C, s.b)
		require.True(t, slices.Equal(want, a), "%dx%d blocks of %d", s.R, s.C, s.b)
	}
}
