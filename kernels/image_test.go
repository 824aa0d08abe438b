package kernels

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// remap copies arrays into one fresh buffer as a weights cache lays them
// out (each 64-byte aligned, ArraySlack readable bytes after it), so a
// restored matrix shares nothing with the original.
func remap(arrays [][]byte) [][]byte {
	off := make([]int, len(arrays))
	n := 0
	for i, a := range arrays {
		off[i] = n
		n += (len(a) + ArraySlack + 63) / 64 * 64
	}
	buf := make([]byte, n+64)
	out := make([][]byte, len(arrays))
	for i, a := range arrays {
		out[i] = buf[off[i] : off[i]+len(a) : off[i]+len(a)+ArraySlack]
		copy(out[i], a)
	}
	return out
}

// TestMatrixImage: a matrix restored from its image over copies of its
// arrays gives the original's products bit for bit, for every storage.
func TestMatrixImage(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const K, N = 64, 96 // N is not a whole number of slabs
	floats := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		return v
	}
	half := func(n int) Matrix {
		h, err := ToFloat16(floats(n))
		require.NoError(t, err)
		return Float16(h)
	}
	bf16 := func(n int) Matrix {
		w, _ := halfMatrixOf(r, bfloat16, n)
		return w
	}
	slabbed := func(w Matrix, k, n int) Matrix {
		s, err := Slabbed(w, k, n)
		require.NoError(t, err)
		return s
	}
	slabbedT := func(w Matrix, rows, cols int) Matrix {
		s, err := SlabbedT(w, rows, cols)
		require.NoError(t, err)
		return s
	}
	q8 := eightBits
	q4k := fourBits
	q4k.Super = 256
	for _, tc := range []struct {
		name string
		w    Matrix
		head bool // an LM head [N,K], read by MatMulT
	}{
		{"float32", Float32(floats(K * N)), false},
		{"float16", half(K * N), false},
		{"float32 slabs", slabbed(Float32(floats(K*N)), K, N), false},
		{"float16 slabs", slabbed(half(K*128), K, 128), false},
		{"float16 slabs of the transpose", slabbedT(half(N*K), N, K), true},
		{"bfloat16", bf16(K * N), false},
		{"bfloat16 slabs", slabbed(bf16(K*128), K, 128), false},
		{"bfloat16 slabs of the transpose", slabbedT(bf16(N*K), N, K), true},
		{"8-bit", randomQuant(r, N, 256, 32, false, q8).matrix(t, false), false},
		{"4-bit K", randomQuant(r, N, 256, 32, true, q4k).matrix(t, false), false},
		{"4-bit K, the file's layout", randomQuant(r, N, 256, 32, true, q4k).matrix(t, true), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img, arrays := tc.w.Image()
			got, err := RestoreMatrix(img, remap(arrays))
			require.NoError(t, err)
			require.Equal(t, tc.w.Len(), got.Len())
			require.Equal(t, tc.w.Bytes(), got.Bytes())
			require.Equal(t, tc.w.Float16Bits(), got.Float16Bits())
			require.Equal(t, tc.w.BFloat16Bits(), got.BFloat16Bits())
			k, n := tc.w.Len()/N, N
			if tc.name == "float16 slabs" || tc.name == "bfloat16 slabs" {
				k, n = K, 128
			}
			x := floats(3 * k)
			if tc.head {
				k = tc.w.Len() / N
				x = floats(3 * k)
				want, out := make([]float32, 3*N), make([]float32, 3*N)
				MatMulT(want, x, tc.w, 3, k, N)
				MatMulT(out, x, got, 3, k, N)
				require.Equal(t, want, out)
				return
			}
			want, out := make([]float32, 3*n), make([]float32, 3*n)
			MatMulAcc(want, x, tc.w, 3, k, n)
			MatMulAcc(out, x, got, 3, k, n)
			require.Equal(t, want, out)
		})
	}
}

// TestRestoreSlabsRefusesTwoFormats: slabs cannot be float16 and
// bfloat16 at once; an image that says so is an error, not one read as
// the other.
func TestRestoreSlabsRefusesTwoFormats(t *testing.T) {
	w, _ := halfMatrixOf(rand.New(rand.NewPCG(1, 2)), bfloat16, 64*64)
	s, err := Slabbed(w, 64, 64)
	require.NoError(t, err)
	img, arrays := s.Image()
	require.True(t, img.BF16)
	img.F16 = true
	_, err = RestoreMatrix(img, remap(arrays))
	require.ErrorContains(t, err, "f16 true, bf16 true")
}

// TestRestoreMatrixRefuses: an image whose arrays contradict its shape is
// an error, not a matrix that reads out of range.
func TestRestoreMatrixRefuses(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	w := randomQuant(r, 64, 256, 32, false, eightBits).matrix(t, false)
	img, arrays := w.Image()
	for _, tc := range []struct {
		name   string
		edit   func(*MatrixImage, [][]byte) [][]byte
		substr string
	}{
		{"short integers", func(img *MatrixImage, a [][]byte) [][]byte {
			img.Arrays[0] -= 64
			a[0] = a[0][:len(a[0])-64]
			return a
		}, "array 0 holds"},
		{"another shape", func(img *MatrixImage, a [][]byte) [][]byte { img.N *= 2; return a }, "want"},
		{"lengths not as described", func(img *MatrixImage, a [][]byte) [][]byte { img.Arrays[1]++; return a }, "described"},
		{"bits", func(img *MatrixImage, a [][]byte) [][]byte { img.Bits, img.Groups.Bits = 7, 7; return a }, "bits"},
		{"no slack", func(img *MatrixImage, a [][]byte) [][]byte { a[0] = a[0][:len(a[0]):len(a[0])]; return a }, "readable past"},
		{"unknown kind", func(img *MatrixImage, a [][]byte) [][]byte { img.Kind = "q1"; return a }, "unknown kind"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := img
			c.Arrays = append([]int(nil), img.Arrays...)
			g := *img.Groups
			c.Groups = &g
			_, err := RestoreMatrix(c, tc.edit(&c, remap(arrays)))
			require.ErrorContains(t, err, tc.substr)
		})
	}
}

// FuzzRestoreMatrix: any image, over arrays of the lengths it describes,
// is a matrix whose every element can be read, or an error; never a
// panic or a read out of range.
func FuzzRestoreMatrix(f *testing.F) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, w := range []Matrix{
		randomQuant(r, 64, 256, 32, false, eightBits).matrix(f, false),
		randomQuant(r, 64, 256, 32, true, fourBits).matrix(f, true),
		Float32(make([]float32, 64*64)),
	} {
		img, _ := w.Image()
		js, err := json.Marshal(img)
		require.NoError(f, err)
		f.Add(js)
	}
	f.Add([]byte(`{"kind":"slabs","k":2,"n":3,"arrays":[24,0]}`))
	f.Add([]byte(`{"kind":"slabs","k":2,"n":3,"bf16":true,"arrays":[0,12]}`))
	f.Add([]byte(`{"kind":"bf16","arrays":[12]}`))
	f.Fuzz(func(t *testing.T, js []byte) {
		var img MatrixImage
		if json.Unmarshal(js, &img) != nil {
			return
		}
		total := 0
		for _, n := range img.Arrays {
			if n < 0 || n > 1<<20 {
				return
			}
			total += n
		}
		if total > 1<<22 {
			return
		}
		arrays := make([][]byte, len(img.Arrays))
		for i, n := range img.Arrays {
			arrays[i] = make([]byte, n)
		}
		w, err := RestoreMatrix(img, remap(arrays))
		if err != nil {
			return
		}
		if w.Len() <= 1<<22 {
			_ = w.Float32s()
		}
	})
}
