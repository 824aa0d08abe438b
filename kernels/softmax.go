package kernels

import "math"

// The parts of a softmax row around ExpShifted: its scaling and largest
// score, and its probabilities narrowed to float32. Each runs the scalar
// operations it replaces, eight or four at a time, so the bits are theirs.

// ScaleMax divides each x[i] by scale in place (with mul, multiplies it:
// HF's Llama family scales q·kᵀ by D^-½, GPT-2 divides by √D) and returns
// the largest result, or lo if that is larger, or NaN if any result is
// NaN, as Go's max gives; of zeros of both signs either may be returned.
func ScaleMax(x []float32, scale float32, mul bool, lo float32) float32 {
	n, mx, nan := scaleMaxKernel(x, scale, mul, lo)
	mx = scaleMaxGeneric(x[n:], scale, mul, mx)
	if nan {
		return float32(math.NaN())
	}
	return mx
}

func scaleMaxGeneric(x []float32, scale float32, mul bool, mx float32) float32 {
	for i := range x {
		if mul {
			x[i] *= scale
		} else {
			x[i] /= scale
		}
		mx = max(mx, x[i])
	}
	return mx
}

// NarrowScaled sets dst[i] = float32(src[i]·m) for i < len(src): a
// softmax's float64 exponentials times the inverse of their sum.
func NarrowScaled(dst []float32, src []float64, m float64) {
	dst = dst[:len(src)]
	n := narrowScaledKernel(dst, src, m)
	narrowScaledGeneric(dst[n:], src[n:], m)
}

func narrowScaledGeneric(dst []float32, src []float64, m float64) {
	for i := range src {
		dst[i] = float32(src[i] * m)
	}
}
