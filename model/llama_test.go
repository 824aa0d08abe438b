package model

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// siluMul's vectorised exponentials give the scalar formula's bits,
// x / (1 + e^−x) in float64 rounded to float32, on ordinary values,
// those whose e^−x overflows or underflows, zeros and infinities.
func TestSiluMulMatchesScalar(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	gate := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 20, -20, 88, -88, 100, -100, 745, -745, 1e30, -1e30,
		float32(math.Inf(1)), float32(math.Inf(-1)), 1e-30, -1e-30}
	for range 1000 {
		gate = append(gate, float32(rng.NormFloat64()*4))
	}
	up := make([]float32, len(gate))
	for i := range up {
		up[i] = float32(rng.NormFloat64())
	}
	out, neg, e := make([]float32, len(gate)), make([]float32, len(gate)), make([]float64, len(gate))
	siluMul(out, gate, up, neg, e)
	for i, x := range gate {
		want := float32(float32(float64(x)/(1+math.Exp(-float64(x)))) * up[i])
		require.Equal(t, math.Float32bits(want), math.Float32bits(out[i]), "gate %g up %g: got %g want %g", x, up[i], out[i], want)
	}
}
