package kernels

// GELU is HF's gelu_new, the tanh approximation, in place, in float64:
// float64 keeps the cubic term from losing bits before the single final
// rounding. It uses the identity 0.5·x·(1+tanh(u)) = x/(1+e^(−2u)) with
// u = √(2/π)·(x+0.044715·x³): math.Exp is cheaper than math.Tanh and the
// two forms agree to float64 rounding; far left, where 1+tanh(u) rounds
// to 0, this form keeps the true tiny value. The AVX2 kernel computes
// the same operations four at a time, math.Exp's included, so it gives
// geluGeneric's bits (tested on every float32 input class).
func GELU(x []float32) { gelu(x) }
