package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/llorch/llorch-check/internal/ggmlnum"
)

// BenchmarkLimbCols: one core's limbCols over a matrix of K=2048
// (Qwen3-30B-A3B's expert gate) in Q4_K's, Q5_K's and Q6_K's integers,
// in ns a kernel group (two rows, two strips, 32 activations): N=64 is
// one slab in cache, N=16384 (32 MB at 4 bits) streams from memory as an
// expert's first use in a prefill does; M rows share each slab (an
// expert's few). On Zen 5, 4 bits (notes 45): 17.6 ns in cache at M=16,
// 19-21 ns from memory at M=8, the rate in the model. Under
// LLORCH_KERNELS=avx2 it times the AVX2 kernels, a row at a time.
func BenchmarkLimbCols(b *testing.B) {
	const K = 2048
	for _, c := range []struct {
		bits   ggmlnum.Groups
		size   int
		offset bool
	}{{fourBits, 32, true}, {fiveBits, 32, true}, {sixBits, 16, false}, {eightBits, 32, false}} {
		for _, N := range []int{64, 16384} {
			r := rand.New(rand.NewPCG(1, 1))
			w := randomQuant(r, N, K, c.size, c.offset, c.bits).matrix(b, false).q
			for _, M := range []int{2, 4, 8, 16} {
				b.Run(fmt.Sprintf("bits=%d/N=%d/M=%d", c.bits.Bits, N, M), func(b *testing.B) {
					per := K / limbRows * limbRecord
					rec := make([]byte, M*per)
					x := randSlice(r, M*K)
					for i := range M {
						splitLimbs(rec[i*per:(i+1)*per], x[i*K:(i+1)*K], w.min, w.g.Size)
					}
					dst := make([]float32, M*N)
					for b.Loop() {
						w.limbCols(dst, rec, M, N, 0, N)
					}
					groups := float64(M/2) * float64(N/slab) * 2 * float64(K/limbRows)
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/groups, "ns/group")
				})
			}
		}
	}
}
