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
// row-major matrix it was made from, float32, float16 and bfloat16. From 4 to 8 rows
// the slabs take the panel path and row-major the tiles, which agree when
// K is a multiple of 4 (matmulCols), so those shapes have such a K.
func TestSlabbedSameBits(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, s := range []struct{ M, K, N int }{
		{1, 3, 17}, {1, 768, 2304}, {2, 300, 515}, {3, 64, 64}, {1, 3072, 768},
		{4, 256, 200}, {5, 132, 97}, {8, 768, 768}, {9, 257, 100}, {13, 258, 531}, {128, 96, 384},
	} {
		w16, _ := halfMatrix(r, s.K*s.N)
		wbf16, _ := halfMatrixOf(r, bfloat16, s.K*s.N)
		for _, w := range []struct {
			name string
			m    Matrix
		}{{"f32", Float32(randSlice(r, s.K*s.N))}, {"f16", w16}, {"bf16", wbf16}} {
			t.Run(fmt.Sprintf("%s/%dx%dx%d", w.name, s.M, s.K, s.N), func(t *testing.T) {
				slabbed, err := Slabbed(clone(w.m), s.K, s.N)
				require.NoError(t, err)
				require.Equal(t, w.m.Float32s(), slabbed.Float32s())
				require.Equal(t, w.m.Float16Bits(), slabbed.Float16Bits())
				require.Equal(t, w.m.BFloat16Bits(), slabbed.BFloat16Bits())
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

// clone copies a float32 or 16-bit float matrix, which Slabbed takes over.
func clone(w Matrix) Matrix {
	return Matrix{f32: slices.Clone(w.f32), h16: slices.Clone(w.h16), form: w.form}
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

// TestSlabbedT: a matrix held as the slabs of its transpose keeps its
// values (Float32s, Float16Bits, BFloat16Bits, Row, row-major as given), and MatMulT on
// it is x·wᵀ within float32 rounding of a float64 sum, each row's bits
// the same alone as in a batch, overwriting dst.
func TestSlabbedT(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, s := range []struct {
		rows, cols int
		form       string
	}{{1037, 64, "f32"}, {1037, 64, "f16"}, {1037, 64, "bf16"}, {100, 896, "f16"}, {100, 896, "bf16"},
		{64, 32, "f32"}, {130, 7, "f16"}, {130, 7, "bf16"}, {5, 48, "f32"}} {
		t.Run(fmt.Sprintf("%dx%d/%s", s.rows, s.cols, s.form), func(t *testing.T) {
			vals := randSlice(r, s.rows*s.cols)
			w := Float32(slices.Clone(vals))
			var f16, bf16 []uint16
			switch s.form {
			case "f16":
				var err error
				f16, err = ToFloat16(vals)
				require.NoError(t, err)
				w = Float16(slices.Clone(f16))
				widenBlock(vals, f16, len(f16), 1, len(f16))
			case "bf16":
				w, vals = halfMatrixOf(r, bfloat16, len(vals))
				bf16 = slices.Clone(w.h16)
			}
			st, err := SlabbedT(w, s.rows, s.cols)
			require.NoError(t, err)
			require.Equal(t, vals, st.Float32s())
			require.Equal(t, f16, st.Float16Bits())
			require.Equal(t, bf16, st.BFloat16Bits())
			require.Equal(t, vals[3*s.cols:4*s.cols], st.Row(make([]float32, s.cols), 3, s.cols))
			require.EqualValues(t, len(vals), st.Len())
			const R = 5
			x := randSlice(r, R*s.cols)
			got := randSlice(r, R*s.rows)
			MatMulT(got, x, st, R, s.cols, s.rows)
			for i := range R {
				one := randSlice(r, s.rows)
				MatMulT(one, x[i*s.cols:(i+1)*s.cols], st, 1, s.cols, s.rows)
				require.Equal(t, one, got[i*s.rows:(i+1)*s.rows], "row %d", i)
				for v := range s.rows {
					var want float64
					for c := range s.cols {
						want += float64(x[i*s.cols+c]) * float64(vals[v*s.cols+c])
					}
					closeTo(t, got[i*s.rows+v], want, s.cols, fmt.Sprintf("[%d,%d]", i, v))
				}
			}
		})
	}
	_, err := SlabbedT(Float32(make([]float32, 10)), 3, 4)
	require.ErrorContains(t, err, "10-element")
}

// TestSlabbedRows: the slabs of an [out,in] weight's transpose made from
// its own rows hold what Slabbed makes of the transposed copy, and
// products with them have the same bits.
func TestSlabbedRows(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	for _, s := range []struct {
		rows, cols int
		form       string
	}{{1037, 64, "f32"}, {100, 896, "f16"}, {100, 896, "bf16"}, {64, 32, "f32"}, {130, 7, "f16"}, {130, 7, "bf16"}, {5, 48, "f32"}} {
		t.Run(fmt.Sprintf("%dx%d/%s", s.rows, s.cols, s.form), func(t *testing.T) {
			vals := randSlice(r, s.rows*s.cols)
			var w, wt Matrix
			switch s.form {
			case "f16":
				bits, err := ToFloat16(vals)
				require.NoError(t, err)
				w, wt = Float16(slices.Clone(bits)), Float16(transposed(bits, s.rows, s.cols))
			case "bf16":
				b, _ := halfMatrixOf(r, bfloat16, len(vals))
				w, wt = BFloat16(slices.Clone(b.h16)), BFloat16(transposed(b.h16, s.rows, s.cols))
			default:
				w, wt = Float32(slices.Clone(vals)), Float32(transposed(vals, s.rows, s.cols))
			}
			got, err := SlabbedRows(w, s.rows, s.cols)
			require.NoError(t, err)
			want, err := Slabbed(wt, s.cols, s.rows)
			require.NoError(t, err)
			require.Equal(t, want.Float32s(), got.Float32s())
			const R = 5
			x := randSlice(r, R*s.cols)
			dst0 := randSlice(r, R*s.rows)
			a, b := slices.Clone(dst0), slices.Clone(dst0)
			MatMulAcc(a, x, want, R, s.cols, s.rows)
			MatMulAcc(b, x, got, R, s.cols, s.rows)
			require.Equal(t, a, b)
		})
	}
	_, err := SlabbedRows(Float32(make([]float32, 10)), 3, 4)
	require.ErrorContains(t, err, "10-element")
}

// TestSlabbedRowsFrom: a 16-bit weight's slabs made straight from its
// rows (in parts, as a fused matrix's come) are SlabbedRows's, bit for
// bit, in memory of their own.
func TestSlabbedRowsFrom(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	for _, s := range []struct {
		rows, cols int
		bf16       bool
	}{{1037, 64, true}, {100, 896, false}, {100, 896, true}, {130, 7, false}, {64, 32, true}, {5, 48, false}} {
		t.Run(fmt.Sprintf("%dx%d/bf16=%v", s.rows, s.cols, s.bf16), func(t *testing.T) {
			form := binary16
			if s.bf16 {
				form = bfloat16
			}
			b, _ := halfMatrixOf(r, form, s.rows*s.cols)
			src := slices.Clone(b.h16)
			var w Matrix
			if s.bf16 {
				w = BFloat16(slices.Clone(src))
			} else {
				w = Float16(slices.Clone(src))
			}
			want, err := SlabbedRows(w, s.rows, s.cols)
			require.NoError(t, err)
			// Two parts, split at a row that is no panel boundary.
			split := s.rows / 3
			parts := [][]uint16{src[:split*s.cols], src[split*s.cols:]}
			got := SlabbedRowsFrom(s.rows, s.cols, s.bf16, func(i int) []uint16 {
				if i < split {
					return parts[0][i*s.cols:]
				}
				return parts[1][(i-split)*s.cols:]
			})
			require.Equal(t, want.s.h16, got.s.h16)
			require.Equal(t, want.s.form, got.s.form)
			require.Equal(t, src, b.h16, "the rows are read, not moved")
		})
	}
}
