package model

import "math"

// geluNew is HF's gelu_new, the tanh approximation, in place. float64 keeps
// the cubic term from losing bits before the single final rounding.
func geluNew(x []float32) {
	const c = 0.7978845608028654 // √(2/π)
	for i, v := range x {
		f := float64(v)
		x[i] = float32(0.5 * f * (1 + math.Tanh(c*(f+0.044715*f*f*f))))
	}
}

// geluErf is the exact erf GELU, used only by FaultErfGELU.
func geluErf(x []float32) {
	for i, v := range x {
		f := float64(v)
		x[i] = float32(0.5 * f * (1 + math.Erf(f/math.Sqrt2)))
	}
}
