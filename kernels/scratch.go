package kernels

import "sync"

// scratch holds float32 copies of float16 weight blocks, formed scales
// and a load's panels being transposed (as bytes), one buffer per
// goroutine at a time.
var scratch = sync.Pool{New: func() any { return new([]float32) }}

// getScratch returns a pooled buffer of at least n floats; give it back
// with scratch.Put.
func getScratch(n int) *[]float32 {
	p := scratch.Get().(*[]float32)
	if cap(*p) < n {
		*p = make([]float32, n)
	}
	*p = (*p)[:n]
	return p
}

// copyRows copies rows rows of n floats from src (stride lds) to dst
// (stride ldd): operands into and out of padded scratch.
func copyRows(dst []float32, ldd int, src []float32, lds, rows, n int) {
	for i := range rows {
		copy(dst[i*ldd:i*ldd+n], src[i*lds:i*lds+n])
	}
}
