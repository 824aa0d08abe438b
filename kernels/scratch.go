package kernels

import "sync"

// scratch holds float32 copies of float16 weight blocks, one buffer per
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
