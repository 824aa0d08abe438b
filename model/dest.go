package model

import "github.com/llorch/llorch-check/kernels"

// slot is where a loaded tensor goes: a float32 vector, or a matrix.
type slot struct {
	vec *[]float32
	mat *kernels.Matrix
}

func vec(p *[]float32) slot      { return slot{vec: p} }
func mat(p *kernels.Matrix) slot { return slot{mat: p} }

func (s slot) empty() bool {
	if s.vec != nil {
		return *s.vec == nil
	}
	return s.mat.Len() == 0
}

// float32s returns the slot's values as float32 (widened if float16).
func (s slot) float32s() []float32 {
	if s.vec != nil {
		return *s.vec
	}
	return s.mat.Float32s()
}

// store places a tensor's float32 values, stored in the file as dtype; a
// matrix of a Float16 model is rounded to float16.
func (s slot) store(m *Model, vals []float32, dtype string) error {
	switch {
	case s.vec != nil:
		*s.vec = vals
	case !m.Float16:
		*s.mat = kernels.Float32(vals)
	default:
		h, err := kernels.ToFloat16(vals)
		if err != nil {
			return err
		}
		*s.mat = kernels.Float16(h)
		if dtype != "F16" {
			m.roundedToF16 = true
		}
	}
	return nil
}
