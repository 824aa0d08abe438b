package kernels

import "math"

// GELU is HF's gelu_new, the tanh approximation, in place, in float64:
// float64 keeps the cubic term from losing bits before the single final
// rounding. It uses the identity 0.5·x·(1+tanh(u)) = x/(1+e^(−2u)) with
// u = √(2/π)·(x+0.044715·x³): math.Exp is cheaper than math.Tanh and the
// two forms agree to float64 rounding; far left, where 1+tanh(u) rounds
// to 0, this form keeps the true tiny value. The AVX2 kernel computes
// the same operations four at a time, math.Exp's included, so it gives
// geluGeneric's bits (tested on every float32 input class).
func GELU(x []float32) { gelu(x) }

// geluArgScale is −2·√(2/π), the exponent's factor, as float64.
const geluArgScale = -2 * 0.7978845608028654

// geluGeneric is GELU one value at a time. The explicit float64
// conversion keeps a compiler that fuses multiply-adds (GOAMD64=v3) from
// fusing u's sum, which the vector kernel does not.
func geluGeneric(x []float32) {
	for i, v := range x {
		f := float64(v)
		u := 0.044715 * f * f
		u = f + float64(u*f)
		x[i] = float32(f / (1 + math.Exp(geluArgScale*u)))
	}
}
