package kernels

// ExpShifted sets dst[i] = math.Exp(float64(src[i]) − float64(sub)) for
// i < len(src): a softmax's exponentials, in float64 as model's softmax
// sums them. The AVX2 kernel runs math.Exp's own operations four at a
// time, so the bits are math.Exp's (tested on every input class).
func ExpShifted(dst []float64, src []float32, sub float32) { expShifted(dst[:len(src)], src, sub) }
