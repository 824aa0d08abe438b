package loader

import (
	"fmt"
	"math"
	"slices"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/kernels"
	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/weights"
)

// loadExperts reads layer l's router and stacked experts into its sparse
// block (Placer.PutExpert), each expert's matrix decoded to float32
// (float16 bits for a Float16 model, bfloat16 bits for a BFloat16 one); a
// quantised file's are held quantised, in the file's type, as its dense
// matrices are.
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
		if _, quantised := gguf.GroupsOf(t.Type); quantised {
			if err := gl.quantisedExperts(s, t, raw); err != nil {
				return err
			}
			continue
		}
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

// quantisedExperts places each expert of the stack s (tensor t, data raw:
// the experts' [rows, cols] matrices one after another, each a whole
// number of rows of blocks) as a quantised matrix of the file's type, the
// layout Quantized gives a dense o or down matrix.
func (gl *llamaGGUFLoader) quantisedExperts(s model.ExpertStack, t gguf.TensorInfo, raw []byte) error {
	n := len(s.HF)
	if len(raw)%n != 0 {
		return fmt.Errorf("tensor %q: %d bytes do not split into %d experts", t.Name, len(raw), n)
	}
	per := len(raw) / n
	for e := range n {
		part := weights.Part{Info: t, Raw: raw[e*per : (e+1)*per], Rows: s.Shape[0]}
		w, err := weights.Quantized([]weights.Part{part}, s.Shape[1], false, gl.release)
		if err != nil {
			return err
		}
		gl.pl.PutExpertQuantized(s.Param(e), w)
	}
	return nil
}
