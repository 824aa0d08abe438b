package kernels

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/llorch/llorch-check/gguf"
	"github.com/stretchr/testify/require"
)

// nativeQuant is a quantised tensor as a file stores it: rows of cols
// integers, a scale (and offset) per group of each row.
type nativeQuant struct {
	rows, cols int
	g          Groups
	q          []int8
	s, o       []float32
}

// Integer ranges of the ggml types: Q6_K's 6 bits from -32 (held as
// int8), Q4_K's and Q4_0's 4 bits from 0 and -8 (held as nibbles).
var (
	sixBits  = Groups{Bits: 6, Min: -32}
	fourBits = Groups{Bits: 4, Min: 0}
	q40Bits  = Groups{Bits: 4, Min: -8}
)

// randomQuant draws integers in the range of bits and float16 scales and
// offsets, as ggml's blocks hold them.
func randomQuant(r *rand.Rand, rows, cols, group int, offset bool, bits Groups) nativeQuant {
	g := Groups{Size: group, Offset: offset, Bits: bits.Bits, Min: bits.Min}
	n := nativeQuant{rows: rows, cols: cols, g: g,
		q: make([]int8, rows*cols), s: make([]float32, rows*cols/group), o: make([]float32, rows*cols/group)}
	for i := range n.q {
		n.q[i] = int8(r.IntN(1<<g.Bits) + g.Min)
	}
	half := func() float32 { return gguf.Float16To32(gguf.Float32To16(float32(r.NormFloat64() / 64))) }
	for i := range n.s {
		n.s[i] = half()
		if offset {
			n.o[i] = half()
		}
	}
	return n
}

func (n nativeQuant) decodeRow(r int, q []int8, s, o []float32) error {
	copy(q, n.q[r*n.cols:(r+1)*n.cols])
	g := n.cols / n.g.Size
	copy(s, n.s[r*g:(r+1)*g])
	if n.g.Offset {
		copy(o, n.o[r*g:(r+1)*g])
	}
	return nil
}

// value is element (r, c) of the native tensor, as ggml computes it.
func (n nativeQuant) value(r, c int) float32 {
	g := (r*n.cols + c) / n.g.Size
	return gguf.GroupValue(n.q[r*n.cols+c], n.s[g], n.o[g], n.g.Offset)
}

// transposed is the tensor's values as a float32 [cols][rows] matrix,
// formed without the kernels.
func (n nativeQuant) transposed() []float32 {
	out := make([]float32, n.rows*n.cols)
	for r := range n.rows {
		for c := range n.cols {
			out[c*n.rows+r] = n.value(r, c)
		}
	}
	return out
}

func (n nativeQuant) matrix(t *testing.T, transposed bool) Matrix {
	t.Helper()
	m, err := Quantized(n.rows, n.cols, n.g, transposed, n.decodeRow)
	require.NoError(t, err)
	return m
}

// TestQuantizedLayout: the matrix is the file's transpose, or with
// transposed its own layout, value for value, through Float32s and Row.
func TestQuantizedLayout(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, c := range []struct {
		offset bool
		bits   Groups
	}{{false, sixBits}, {true, sixBits}, {false, q40Bits}, {true, fourBits}} {
		n := randomQuant(r, 101, 64, 16, c.offset, c.bits)
		kn, nk := n.matrix(t, false).Float32s(), n.matrix(t, true).Float32s()
		for row := range n.rows {
			for c := range n.cols {
				v := math.Float32bits(n.value(row, c))
				require.Equal(t, v, math.Float32bits(kn[c*n.rows+row]), "transpose (%d,%d)", row, c)
				require.Equal(t, v, math.Float32bits(nk[row*n.cols+c]), "own layout (%d,%d)", row, c)
			}
		}
		buf := make([]float32, n.cols)
		require.Equal(t, nk[5*n.cols:6*n.cols], n.matrix(t, true).Row(buf, 5, n.cols))
		require.Equal(t, kn[7*n.rows:8*n.rows], n.matrix(t, false).Row(make([]float32, n.rows), 7, n.rows))
		require.EqualValues(t, n.rows*n.cols, n.matrix(t, false).Len())
	}
	_, err := Quantized(4, 30, Groups{Size: 16, Bits: 8, Min: -128}, false, nil)
	require.Error(t, err, "groups that do not divide a row")
	_, err = Quantized(4, 32, Groups{Size: 32, Bits: 8, Min: -127}, false, nil)
	require.Error(t, err, "integers beyond int8")
	bad := errors.New("bad block")
	_, err = Quantized(4, 32, Groups{Size: 32, Bits: 8, Min: -128}, false, func(int, []int8, []float32, []float32) error { return bad })
	require.ErrorIs(t, err, bad)
	wide := randomQuant(r, 4, 32, 32, false, sixBits)
	wide.g.Bits, wide.g.Min = 4, 0
	_, err = Quantized(4, 32, wide.g, false, wide.decodeRow)
	require.ErrorContains(t, err, "outside", "a block whose integers exceed the declared 4 bits")
}

// TestQuantMatMulSameBits: a quantised matrix gives, on every kernel path
// (panel and tile, serial and parallel, ragged column edges, groups of 16
// and 32, with and without offsets), the bits of float32 weights holding
// its values.
func TestQuantMatMulSameBits(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, s := range []struct{ M, K, N, group int }{
		{1, 32, 17, 32}, {1, 768, 2304, 32}, {2, 320, 515, 16}, {3, 64, 64, 32}, {1, 64, 100, 32},
		{3, 96, 160, 16}, {4, 256, 200, 32}, {5, 128, 97, 16}, {8, 768, 768, 32}, {13, 288, 531, 32},
		{128, 96, 384, 16},
	} {
		for _, c := range []struct {
			offset bool
			bits   Groups
		}{{false, sixBits}, {true, sixBits}, {false, q40Bits}, {true, fourBits}} {
			name := fmt.Sprintf("%dx%dx%d/g%d/offset=%t/bits=%d", s.M, s.K, s.N, s.group, c.offset, c.bits.Bits)
			t.Run(name, func(t *testing.T) {
				n := randomQuant(r, s.N, s.K, s.group, c.offset, c.bits)
				x := randSlice(r, s.M*s.K)
				got, want := randSlice(r, s.M*s.N), make([]float32, s.M*s.N)
				copy(want, got)
				MatMulAcc(got, x, n.matrix(t, false), s.M, s.K, s.N)
				MatMulAcc(want, x, Float32(n.transposed()), s.M, s.K, s.N)
				require.Equal(t, want, got)
			})
		}
	}
}

// TestQuantMatMulT: the LM head on a quantised embedding is x·Wᵀ, within
// float32 rounding of a float64 sum, overwriting what dst held.
func TestQuantMatMulT(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	const V, C = 1037, 64
	for _, R := range []int{1, 3, 8} {
		n := randomQuant(r, V, C, 32, true, fourBits)
		x, got := randSlice(r, R*C), randSlice(r, R*V)
		MatMulT(got, x, n.matrix(t, true), R, C, V)
		for i := range R {
			for v := range V {
				var want float64
				for c := range C {
					want += float64(x[i*C+c]) * float64(n.value(v, c))
				}
				closeTo(t, got[i*V+v], want, C, fmt.Sprintf("R=%d logit [%d,%d]", R, i, v))
			}
		}
	}
}

func BenchmarkMatmulDecodeQuant(b *testing.B) {
	for _, bits := range []Groups{sixBits, fourBits} {
		b.Run(fmt.Sprintf("bits=%d", bits.Bits), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 1))
			const K, N = 768, 3072
			n := randomQuant(r, N, K, 32, false, bits)
			w, err := Quantized(N, K, n.g, false, n.decodeRow)
			require.NoError(b, err)
			x, dst := randSlice(r, K), make([]float32, N)
			for b.Loop() {
				MatMulAcc(dst, x, w, 1, K, N)
			}
			b.ReportMetric(float64(w.Bytes())*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}
