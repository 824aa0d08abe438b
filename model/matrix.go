package model

import (
	"fmt"
	"math"
	"sync"

	"github.com/llorch/llorch-check/gguf"
)

// matrix is a row-major weight matrix held either as float32 or, under
// LoadOptions.Float16, as IEEE binary16 bits. The kernels widen float16
// blocks into float32 scratch as they stream them, so arithmetic stays
// float32 while a decode step reads half the bytes.
type matrix struct {
	f32 []float32
	f16 []uint16
}

func (w matrix) len() int { return len(w.f32) + len(w.f16) }

func (w matrix) bytes() int64 { return int64(len(w.f32))*4 + int64(len(w.f16))*2 }

// float32s returns the values as float32: the slice itself, or a widened
// copy of the float16 bits.
func (w matrix) float32s() []float32 {
	if w.f16 == nil {
		return w.f32
	}
	out := make([]float32, len(w.f16))
	widenBlock(out, w.f16, len(w.f16), 1, len(w.f16))
	return out
}

// row widens row r of a [rows,cols] matrix into dst[:cols] and returns it.
func (w matrix) row(dst []float32, r, cols int) []float32 {
	if w.f16 == nil {
		return w.f32[r*cols : (r+1)*cols]
	}
	dst = dst[:cols]
	widenBlock(dst, w.f16[r*cols:], cols, 1, cols)
	return dst
}

// toFloat16 rounds vals to the nearest binary16, ties to even (as torch's
// .half() does).
func toFloat16(vals []float32) ([]uint16, error) {
	out := make([]uint16, len(vals))
	return out, roundFloat16(out, vals, 0)
}

// roundFloat16 rounds vals into dst; vals[0] is element first of its
// tensor, for the error. A finite value beyond float16's range is an error
// rather than a silent infinity.
func roundFloat16(dst []uint16, vals []float32, first int) error {
	for i, v := range vals {
		h := gguf.Float32To16(v)
		if h&0x7fff == 0x7c00 && !math.IsInf(float64(v), 0) {
			return fmt.Errorf("element %d is %g, beyond float16's range (±65504); load the model as float32", first+i, v)
		}
		dst[i] = h
	}
	return nil
}

// widenBlockGeneric is the reference semantics of widenBlock:
// dst[r*n+j] = float32(src[r*lds+j]) for r < rows, j < n.
func widenBlockGeneric(dst []float32, src []uint16, lds, rows, n int) {
	for r := 0; r < rows; r++ {
		d, s := dst[r*n:(r+1)*n], src[r*lds:r*lds+n]
		for j, h := range s {
			d[j] = gguf.Float16To32(h)
		}
	}
}

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

// slot is where a loaded tensor goes: a float32 vector, or a matrix.
type slot struct {
	vec *[]float32
	mat *matrix
}

func vec(p *[]float32) slot { return slot{vec: p} }
func mat(p *matrix) slot    { return slot{mat: p} }

func (s slot) empty() bool {
	if s.vec != nil {
		return *s.vec == nil
	}
	return s.mat.len() == 0
}

// float32s returns the slot's values as float32 (widened if float16).
func (s slot) float32s() []float32 {
	if s.vec != nil {
		return *s.vec
	}
	return s.mat.float32s()
}

// store places a tensor's float32 values, stored in the file as dtype; a
// matrix of a Float16 model is rounded to float16.
func (s slot) store(m *Model, vals []float32, dtype string) error {
	switch {
	case s.vec != nil:
		*s.vec = vals
	case !m.Float16:
		s.mat.f32 = vals
	default:
		h, err := toFloat16(vals)
		if err != nil {
			return err
		}
		s.mat.f16 = h
		if dtype != "F16" {
			m.roundedToF16 = true
		}
	}
	return nil
}
