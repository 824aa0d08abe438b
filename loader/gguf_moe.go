package loader

import (
	"fmt"
	"math"
	"slices"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/kernels"
	"github.com/llorch/llorch-check/weights"
)

// loadExperts reads layer l's router and stacked experts into its sparse
// block (Placer.PutExpert), each expert's matrix decoded to float32
// (float16 bits for a Float16 model, bfloat16 bits for a BFloat16 one); a
// quantised file's experts are dequantised, not held quantised as its
// dense matrices are.
func (gl *llamaGGUFLoader) loadExperts(l int) error {
	m := gl.m
	for _, s := range m.Config.ExpertStacks(l) {
		t, ok := gl.f.Tensor(s.GGUF)
		if !ok {
			return fmt.Errorf("missing tensor %q", s.GGUF)
		}
		if err := weights.CheckTensor(t, weights.Dims(s.GGUFShape())); err != nil {
			return err
		}
		raw, err := gl.f.TensorData(t.Name)
		if err != nil {
			return err
		}
		gl.dtypes[t.Type.String()] = true
		vals, err := (weights.Part{Info: t, Raw: raw, Rows: s.Shape[0]}).Float32s()
		if err != nil {
			return err
		}
		if gl.release != nil {
			gl.release(raw)
		}
		n := s.Shape[0] * s.Shape[1]
		for e := range s.HF {
			v := vals[e*n : (e+1)*n]
			var h []uint16
			switch {
			case m.BFloat16:
				h = make([]uint16, n)
				for i, x := range v {
					h[i] = uint16(math.Float32bits(x) >> 16) // a bfloat16 file's values: exact
				}
				v = nil
			case m.Float16:
				if h, err = kernels.ToFloat16(v); err != nil {
					return fmt.Errorf("tensor %q: %w", s.GGUF, err)
				}
				if t.Type != gguf.GGMLTypeF16 {
					gl.pl.Rounded()
				}
				v = nil
			default:
				v = slices.Clone(v)
			}
			if err := gl.pl.PutExpert(s.Param(e), v, h); err != nil {
				return err
			}
		}
	}
	return nil
}
