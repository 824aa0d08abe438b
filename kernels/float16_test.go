package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/llorch/llorch-check/internal/ggmlnum"
	"github.com/stretchr/testify/require"
)

// TestWidenBlockExhaustive widens every float16 bit pattern, through the
// vector kernel and its generic edges (rows of 1000 of a 1003-wide
// source), against the exact scalar conversion.
func TestWidenBlockExhaustive(t *testing.T) {
	const lds, n = 1003, 1000
	rows := (1<<16 + n - 1) / n
	src := make([]uint16, rows*lds)
	want := make([]float32, rows*n)
	for i := range 1 << 16 {
		r, j := i/n, i%n
		src[r*lds+j] = uint16(i)
		want[r*n+j] = ggmlnum.Float16To32(uint16(i))
	}
	got := make([]float32, rows*n)
	widenBlock(got, src, lds, rows, n)
	for i := range got {
		g, w := got[i], want[i]
		if math.IsNaN(float64(w)) { // VCVTPH2PS quiets signalling NaNs
			require.True(t, math.IsNaN(float64(g)), "element %d: got %g, want NaN", i, g)
			continue
		}
		require.Equal(t, math.Float32bits(w), math.Float32bits(g), "element %d: got %g, want %g", i, g, w)
	}
}

// halfMatrix returns random float16 weights and the same values as float32.
func halfMatrix(r *rand.Rand, n int) (Matrix, []float32) { return halfMatrixOf(r, binary16, n) }

// halfMatrixOf returns random weights of 16-bit format h and the same
// values as float32: normal values, and for bfloat16 one in 61 a
// subnormal (float32's too: bfloat16 widens to them exactly, and every
// path must keep them, none flush them).
func halfMatrixOf(r *rand.Rand, h half, n int) (Matrix, []float32) {
	bits := make([]uint16, n)
	f := make([]float32, n)
	for i := range bits {
		v := float32(r.NormFloat64())
		if h == binary16 {
			bits[i] = ggmlnum.Float32To16(v)
			f[i] = ggmlnum.Float16To32(bits[i])
			continue
		}
		bits[i] = uint16(math.Float32bits(v) >> 16)
		if i%61 == 0 {
			bits[i] = bits[i]&0x8000 | uint16(1+r.IntN(0x7f))
		}
		f[i] = math.Float32frombits(uint32(bits[i]) << 16)
	}
	if h == bfloat16 {
		return BFloat16(bits), f
	}
	return Float16(bits), f
}

// forms are the 16-bit float formats, by name, for the tests of both.
var forms = []struct {
	name string
	h    half
}{{"f16", binary16}, {"bf16", bfloat16}}

// TestMatmulHalfSameBits: widening float16 or bfloat16 in blocks must not
// change a single bit against float32 weights of the same values, for
// every kernel path (panel and tile, parallel and serial, ragged edges).
func TestMatmulHalfSameBits(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, s := range []struct{ M, K, N int }{
		{1, 3, 17}, {1, 768, 2304}, {2, 300, 515}, {3, 64, 64}, {4, 257, 200},
		{5, 129, 97}, {8, 768, 768}, {13, 258, 531}, {128, 96, 384},
	} {
		for _, f := range forms {
			t.Run(fmt.Sprintf("%s/%dx%dx%d", f.name, s.M, s.K, s.N), func(t *testing.T) {
				w16, w32 := halfMatrixOf(r, f.h, s.K*s.N)
				x := randSlice(r, s.M*s.K)
				got, want := randSlice(r, s.M*s.N), make([]float32, s.M*s.N)
				copy(want, got)
				MatMulAcc(got, x, w16, s.M, s.K, s.N)
				MatMulAcc(want, x, Float32(w32), s.M, s.K, s.N)
				require.Equal(t, want, got)
			})
		}
	}
}

// TestLMHeadHalfSameBits: MatMulT on row-major float16 or bfloat16 rows
// (the dot panels and their widened edges) has float32 rows' bits.
func TestLMHeadHalfSameBits(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const V, C = 4099, 40
	for _, f := range forms {
		w16, w32 := halfMatrixOf(r, f.h, V*C)
		for _, R := range []int{1, 3, 8} {
			x := randSlice(r, R*C)
			got, want := make([]float32, R*V), make([]float32, R*V)
			MatMulT(got, x, w16, R, C, V)
			MatMulT(want, x, Float32(w32), R, C, V)
			require.Equal(t, want, got, "%s R=%d", f.name, R)
		}
	}
}

func BenchmarkMatmulDecodeFloat16(b *testing.B) { benchmarkMatmulDecodeHalf(b, binary16) }

func BenchmarkMatmulDecodeBFloat16(b *testing.B) { benchmarkMatmulDecodeHalf(b, bfloat16) }

// benchmarkMatmulDecodeHalf: one decode step's product with a row-major
// 768x3072 matrix of 16-bit format h (the panel kernels).
func benchmarkMatmulDecodeHalf(b *testing.B, h half) {
	r := rand.New(rand.NewPCG(1, 1))
	const K, N = 768, 3072
	w, _ := halfMatrixOf(r, h, K*N)
	x, dst := randSlice(r, K), make([]float32, N)
	for b.Loop() {
		MatMulAcc(dst, x, w, 1, K, N)
	}
	b.ReportMetric(float64(K*N*2)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
}

// TestNarrowFloat16: the kernel's binary16 bits are ggmlnum.Float32To16's
// for every class of input (ties at every exponent, the edges of the
// range and of the subnormals, infinities, quiet and signalling NaNs with
// payloads, zeros of both signs) and for random bit patterns, at lengths
// around the vector width.
func TestNarrowFloat16(t *testing.T) {
	r := rand.New(rand.NewPCG(47, 48))
	special := []uint32{0, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0x7f800001, 0xffbfffff, 0x7fa00123,
		0x477fe000, 0x477fefff, 0x477ff000, 0x477fffff, 0x47800000, // 65504, just below and at the overflow tie
		0x38800000, 0x387fffff, 0x33800000, 0x33000000, 0x33000001, 0x32ffffff, 0x00000001, // float16's smallest normal and subnormals
		0x3f801000, 0x3f803000, 0x3f800fff, 0x3f801001, // ties to even at 1
	}
	for _, n := range []int{0, 1, 7, 8, 9, 64, 1000} {
		src := make([]float32, n)
		for i := range src {
			if i < len(special) && n >= len(special) {
				src[i] = math.Float32frombits(special[i])
				continue
			}
			src[i] = math.Float32frombits(r.Uint32())
			if i%3 == 0 { // values float16 holds, mostly
				src[i] = float32(r.NormFloat64()) * float32(math.Pow(2, float64(r.IntN(40)-24)))
			}
		}
		got := make([]uint16, n)
		NarrowFloat16(got, src)
		for i, v := range src {
			require.Equal(t, ggmlnum.Float32To16(v), got[i], "n=%d value %d (%#08x)", n, i, math.Float32bits(v))
		}
	}
}

// BenchmarkNarrowFloat16: a prefill's keys or values of one layer (128
// positions of 768) into a float16 cache, the kernel against the scalar
// conversion, in nanoseconds a value.
func BenchmarkNarrowFloat16(b *testing.B) {
	src := randSlice(rand.New(rand.NewPCG(1, 1)), 128*768)
	dst := make([]uint16, len(src))
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"kernel", func() { NarrowFloat16(dst, src) }},
		{"scalar", func() {
			for i, v := range src {
				dst[i] = ggmlnum.Float32To16(v)
			}
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				c.f()
			}
			b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(b.N)/float64(len(src)), "ns/value")
		})
	}
}

// TestWidenToStrided: widening into rows of a wider destination (the
// slabs' gather writes a 64-column slab into a block of many) writes
// each row's n values at its stride and nothing between them, through
// the vector kernel and the generic edges, for both 16-bit formats.
func TestWidenToStrided(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, f := range forms {
		for _, s := range []struct{ rows, n, lds, ldd int }{
			{1, 64, 64, 64}, {5, 64, 64, 200}, {3, 37, 40, 100}, {4, 96, 130, 97}, {2, 15, 15, 16},
		} {
			t.Run(fmt.Sprintf("%s/%dx%d/lds%d/ldd%d", f.name, s.rows, s.n, s.lds, s.ldd), func(t *testing.T) {
				src := make([]uint16, (s.rows-1)*s.lds+s.n)
				for i := range src {
					src[i] = uint16(r.Uint32())&0x3fff | 0x1000 // finite values of both formats
				}
				const sentinel = -7.5
				got := make([]float32, (s.rows-1)*s.ldd+s.n+3)
				for i := range got {
					got[i] = sentinel
				}
				f.h.widenTo(got, s.ldd, src, s.lds, s.rows, s.n)
				want := slices.Repeat([]float32{sentinel}, len(got))
				for row := range s.rows {
					widenRowGeneric(f.h, want[row*s.ldd:row*s.ldd+s.n], src[row*s.lds:])
				}
				require.Equal(t, want, got)
			})
		}
	}
}

// widenRowGeneric is the reference conversion of one row of format h.
func widenRowGeneric(h half, dst []float32, src []uint16) {
	if h == bfloat16 {
		widenBF16Generic(dst, src, len(dst), 1, len(dst))
		return
	}
	widenBlockGeneric(dst, src, len(dst), 1, len(dst))
}
