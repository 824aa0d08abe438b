package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// layoutMatrix is a K×N matrix of the named layout: float32, float16 or
// bfloat16 ("16", "bf16" suffixes), row-major or slabbed (Slabbed, as the
// model holds its blocks' matrices).
func layoutMatrix(r *rand.Rand, layout string, K, N int) Matrix {
	var w Matrix
	switch layout {
	case "rowmajor16", "slabbed16":
		w, _ = halfMatrix(r, K*N)
	case "rowmajorbf16", "slabbedbf16":
		// halfMatrixOf's subnormals (for the tests) cost a microcode
		// assist an FMA on Intel: 50x slower, and not what weights hold.
		bits := make([]uint16, K*N)
		for i := range bits {
			bits[i] = uint16(math.Float32bits(float32(r.NormFloat64())) >> 16)
		}
		w = BFloat16(bits)
	default:
		w = Float32(randSlice(r, K*N))
	}
	switch layout {
	case "slabbed", "slabbed16", "slabbedbf16":
		w, _ = Slabbed(w, K, N)
	}
	return w
}

// BenchmarkDecodeLayout streams 24 matrices of 768x3072 (GPT-2
// 124M's MLP weights, beyond any cache) at M = 1, row-major against
// slabbed, float32, float16 and bfloat16; GB/s is the weights' bytes.
func BenchmarkDecodeLayout(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	const K, N, count = 768, 3072, 24
	for _, layout := range []string{"rowmajor", "slabbed", "rowmajor16", "slabbed16", "rowmajorbf16", "slabbedbf16"} {
		ws := make([]Matrix, count)
		for i := range ws {
			ws[i] = layoutMatrix(r, layout, K, N)
		}
		x, dst := randSlice(r, K), make([]float32, N)
		b.Run(layout, func(b *testing.B) {
			for b.Loop() {
				for _, w := range ws {
					MatMulAcc(dst, x, w, 1, K, N)
				}
			}
			s := b.Elapsed().Seconds()
			b.ReportMetric(float64(K*N*count)*float64(b.N)/s/1e9, "Gweights/s")
			b.ReportMetric(float64(ws[0].Bytes()*count)*float64(b.N)/s/1e9, "GB/s")
		})
	}
}

// BenchmarkPrefillLayout: a 128-row product (a prefill's) with a slabbed
// 768x3072 matrix, as the model holds c_fc, float32, float16 and
// bfloat16: prefill's tiles over blocks gathered (and widened) from the
// slabs.
func BenchmarkPrefillLayout(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	const M, K, N = 128, 768, 3072
	for _, layout := range []string{"slabbed", "slabbed16", "slabbedbf16"} {
		w := layoutMatrix(r, layout, K, N)
		x, dst := randSlice(r, M*K), make([]float32, M*N)
		b.Run(layout, func(b *testing.B) {
			for b.Loop() {
				MatMulAcc(dst, x, w, M, K, N)
			}
			b.ReportMetric(2*float64(M*K*N)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkWidenHalf: widening a 64×768 block (a slab's rows of c_fc) of
// float16 or bfloat16 to float32, as prefill's tiles' gather does, in
// nanoseconds a value.
func BenchmarkWidenHalf(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	const n = 64 * 768
	dst := make([]float32, n)
	for _, f := range forms {
		w, _ := halfMatrixOf(r, f.h, n)
		b.Run(f.name, func(b *testing.B) {
			for b.Loop() {
				f.h.widen(dst, w.h16, 64, n/64, 64)
			}
			b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(b.N)/n, "ns/value")
		})
	}
}

// BenchmarkDecodeSlabInCache: one decode product with a slabbed 768x320
// matrix (five slabs; 0.5 MB as 16-bit floats, in L2), float32, float16
// and bfloat16, for 1 sequence and for 8 (batched decode, and a prefill's
// rows of one expert): the slab kernels' own rate, where the streaming
// benchmark above measures memory. Take the fastest of repeated runs on
// a shared machine.
func BenchmarkDecodeSlabInCache(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	const K, N = 768, 320
	for _, layout := range []string{"slabbed", "slabbed16", "slabbedbf16"} {
		w := layoutMatrix(r, layout, K, N)
		for _, M := range []int{1, 8} {
			x, dst := randSlice(r, M*K), make([]float32, M*N)
			b.Run(fmt.Sprintf("%s/M=%d", layout, M), func(b *testing.B) {
				for b.Loop() {
					MatMulAcc(dst, x, w, M, K, N)
				}
				s := b.Elapsed().Seconds()
				b.ReportMetric(float64(w.Bytes())*float64(b.N)/s/1e9, "GB/s")
				b.ReportMetric(2*float64(M*K*N)*float64(b.N)/s/1e9, "GFLOP/s")
			})
		}
	}
}
