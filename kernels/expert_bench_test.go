package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkMatmulExpertQuant: the products a mixture of experts' prefill
// makes, a few rows an expert (128 tokens × 8 chosen of 128 experts is 8
// rows each) with Qwen3-30B-A3B's gate shape, 4-bit, cycling through 32
// experts (28 MB: beyond L2, as the model's are), in multiply-adds a
// second. BenchmarkMatmulPrefillQuant's 128 rows are the dense rate.
func BenchmarkMatmulExpertQuant(b *testing.B) {
	const K, N, experts = 2048, 768, 32
	r := rand.New(rand.NewPCG(1, 1))
	ws := make([]Matrix, experts)
	for e := range ws {
		ws[e] = randomQuant(r, N, K, 32, false, fourBits).matrix(b, false)
	}
	for _, M := range []int{1, 2, 4, 8, 16} {
		b.Run(fmt.Sprintf("M=%d", M), func(b *testing.B) {
			x, dst := randSlice(r, M*K), make([]float32, M*N)
			for b.Loop() {
				for _, w := range ws {
					MatMulAcc(dst, x, w, M, K, N)
				}
			}
			b.ReportMetric(float64(M*K*N*experts)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
		})
	}
}
