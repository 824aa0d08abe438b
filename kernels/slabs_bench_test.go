package kernels

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkDecodeLayout streams 24 matrices of 768x3072 (GPT-2
// 124M's MLP weights, beyond any cache) at M = 1, row-major against slabbed.
func BenchmarkDecodeLayout(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	const K, N, count = 768, 3072, 24
	for _, layout := range []string{"rowmajor", "slabbed", "rowmajor16", "slabbed16"} {
		ws := make([]Matrix, count)
		for i := range ws {
			if layout == "rowmajor16" || layout == "slabbed16" {
				ws[i], _ = halfMatrix(r, K*N)
			} else {
				ws[i] = Float32(randSlice(r, K*N))
			}
			if layout == "slabbed" || layout == "slabbed16" {
				ws[i], _ = Slabbed(ws[i], K, N)
			}
		}
		x, dst := randSlice(r, K), make([]float32, N)
		b.Run(layout, func(b *testing.B) {
			for b.Loop() {
				for _, w := range ws {
					MatMulAcc(dst, x, w, 1, K, N)
				}
			}
			b.ReportMetric(float64(K*N*count)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gweights/s")
		})
	}
}
