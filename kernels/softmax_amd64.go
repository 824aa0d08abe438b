//go:build amd64 && !purego

package kernels

//go:noescape
func scaleMaxAVX2(x *float32, n int, mul int, scale float32, lo float32) (mx float32, nan bool)

//go:noescape
func narrowScaledAVX2(dst *float32, src *float64, m float64, n int)

// scaleMaxKernel runs ScaleMax's kernel on x's first multiple of 8 and
// returns that count, the running maximum and whether a NaN was seen.
func scaleMaxKernel(x []float32, scale float32, mul bool, lo float32) (int, float32, bool) {
	n := len(x) &^ 7
	if !useAVX2 || n == 0 {
		return 0, lo, false
	}
	m := 0
	if mul {
		m = 1
	}
	mx, nan := scaleMaxAVX2(&x[0], n, m, scale, lo)
	return n, mx, nan
}

// narrowScaledKernel runs NarrowScaled's kernel on the first multiple of
// 4 and returns that count.
func narrowScaledKernel(dst []float32, src []float64, m float64) int {
	n := len(src) &^ 3
	if !useAVX2 || n == 0 {
		return 0
	}
	_ = dst[n-1]
	narrowScaledAVX2(&dst[0], &src[0], m, n)
	return n
}
