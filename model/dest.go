package model

import "github.com/llorch/llorch-check/kernels"

// dest is where a loaded tensor goes (a parameter table's dst): a float32
// vector, or a matrix.
type dest struct {
	vec *[]float32
	mat *kernels.Matrix
}

func vec(p *[]float32) dest      { return dest{vec: p} }
func mat(p *kernels.Matrix) dest { return dest{mat: p} }

func (d dest) empty() bool {
	if d.vec != nil {
		return *d.vec == nil
	}
	return d.mat.Len() == 0
}

// float32s returns the destination's values as float32 (widened if float16).
func (d dest) float32s() []float32 {
	if d.vec != nil {
		return *d.vec
	}
	return d.mat.Float32s()
}

// store places a tensor's float32 values, stored in the file as dtype; a
// matrix of a Float16 model is rounded to float16.
func (d dest) store(m *Model, vals []float32, dtype string) error {
	switch {
	case d.vec != nil:
		*d.vec = vals
	case !m.Float16:
		*d.mat = kernels.Float32(vals)
	default:
		h, err := kernels.ToFloat16(vals)
		if err != nil {
			return err
		}
		*d.mat = kernels.Float16(h)
		if dtype != "F16" {
			m.roundedToF16 = true
		}
	}
	return nil
}
