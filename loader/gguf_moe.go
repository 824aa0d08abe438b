package loader

import (
	"fmt"
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
		if err := gl.denseExperts(s, t, raw); err != nil {
			return err
		}
	}
	return nil
}

// denseExperts places each expert of the unquantised stack s (tensor t,
// data raw) as float32, or as float16 or bfloat16 bits for a model held
// so. Each expert is decoded on its own: decoding the stack at once held
// all of it as float32 beside the model (a Qwen3-30B-A3B layer's 805 MB
// for one of its three stacks: an F16 file's first load peaked at 1.4x
// the file, notes 37).
func (gl *llamaGGUFLoader) denseExperts(s model.ExpertStack, t gguf.TensorInfo, raw []byte) error {
	m := gl.m
	per, err := expertBytes(t, raw, len(s.HF))
	if err != nil {
		return err
	}
	n := s.Shape[0] * s.Shape[1]
	// An F16 stack held as float16, or BF16 as bfloat16, is the file's
	// bits: copied, not decoded to float32 and rounded back (that was 40%
	// of a Qwen3-30B-A3B F16 file's first load, notes 42).
	if gl.pl.HeldAsStored(t.Type.String()) {
		return gl.bitsExperts(s, t, raw, per, n)
	}
	if m.BFloat16 {
		// A model is held as bfloat16 only when every matrix, these
		// stacks included, is BF16 (ggufStoredAs), and those took
		// bitsExperts: anything else here would be rounded.
		return fmt.Errorf("tensor %q: a %s expert stack in a model held as bfloat16", t.Name, t.Type)
	}
	buf := make([]float32, n) // one expert decoded, reused: only a float32 model keeps it
	for e := range s.HF {
		part := raw[e*per : (e+1)*per]
		if err := gguf.DecodeFloat32(t.Type, part, buf); err != nil {
			return fmt.Errorf("tensor %q, expert %d: %w", t.Name, e, err)
		}
		if gl.release != nil {
			gl.release(part)
		}
		var v []float32
		var h []uint16
		switch {
		case m.Float16:
			var err error
			if h, err = kernels.ToFloat16(buf); err != nil {
				return fmt.Errorf("tensor %q: %w", s.GGUF, err)
			}
			gl.pl.Rounded() // an F16 stack took bitsExperts
		default:
			v = slices.Clone(buf)
		}
		if err := gl.pl.PutExpert(s.Param(e), v, h); err != nil {
			return err
		}
	}
	return nil
}

// bitsExperts places each expert of the 16-bit stack s (tensor t, data
// raw, per bytes and n values an expert) as its bits, copied from the
// file's pages before they are released.
func (gl *llamaGGUFLoader) bitsExperts(s model.ExpertStack, t gguf.TensorInfo, raw []byte, per, n int) error {
	for e := range s.HF {
		part := raw[e*per : (e+1)*per]
		view, err := weights.Float16View(part, n)
		if err != nil {
			return fmt.Errorf("tensor %q, expert %d: %w", t.Name, e, err)
		}
		h := slices.Clone(view)
		if gl.release != nil {
			gl.release(part)
		}
		if err := gl.pl.PutExpert(s.Param(e), nil, h); err != nil {
			return err
		}
	}
	return nil
}

// expertBytes is the size of one expert's matrix in a stack of n.
func expertBytes(t gguf.TensorInfo, raw []byte, n int) (int, error) {
	if len(raw)%n != 0 {
		return 0, fmt.Errorf("tensor %q: %d bytes do not split into %d experts", t.Name, len(raw), n)
	}
	return len(raw) / n, nil
}

// quantisedExperts places each expert of the stack s (tensor t, data raw:
// the experts' [rows, cols] matrices one after another, each a whole
// number of rows of blocks) as a quantised matrix of the file's type, the
// layout Quantized gives a dense o or down matrix.
func (gl *llamaGGUFLoader) quantisedExperts(s model.ExpertStack, t gguf.TensorInfo, raw []byte) error {
	per, err := expertBytes(t, raw, len(s.HF))
	if err != nil {
		return err
	}
	for e := range s.HF {
		part := weights.Part{Info: t, Raw: raw[e*per : (e+1)*per], Rows: s.Shape[0]}
		w, err := weights.Quantized([]weights.Part{part}, s.Shape[1], false, gl.release)
		if err != nil {
			return err
		}
		gl.pl.PutExpertQuantized(s.Param(e), w)
	}
	return nil
}
