package model

import (
	"fmt"
	"math"
	"slices"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/kernels"
	"github.com/llorch/llorch-check/safetensors"
	"github.com/llorch/llorch-check/weights"
)

// A mixture of experts in llama.cpp's GGUF layout: a sparse layer's
// router, blk.N.ffn_gate_inp [E,C], then its experts' gate, up and down
// stacked, blk.N.ffn_{gate,up,down}_exps [E,I,C], [E,I,C], [E,C,I]
// (row-major; GGUF's dimensions are the reverse), after the layer's
// ffn_norm, as pytorch/gguf_write.py writes them. The keys:
// {arch}.expert_count, {arch}.expert_used_count and, for Qwen3-MoE,
// {arch}.expert_feed_forward_length.

// moeWritable refuses what llama.cpp's graph cannot say: its qwen3moe has
// a mixture of experts in every layer and always renormalises the chosen
// experts' weights (Mixtral's renormalises anyway).
func moeWritable(c Config) error {
	m := c.MoE
	if m == nil {
		return nil
	}
	if m.Dense != nil {
		return fmt.Errorf("%s with dense layers (mlp_only_layers, decoder_sparse_step) is not written: llama.cpp's %s has experts in every layer", c.ModelType, c.llama().gguf())
	}
	if !m.NormTopK {
		return fmt.Errorf("%s with norm_topk_prob false is not written: llama.cpp's %s always renormalises the chosen experts' weights", c.ModelType, c.llama().gguf())
	}
	return nil
}

// moeKeys are the experts' keys under llama.cpp's architecture a.
func moeKeys(c Config, a string) []gguf.KV {
	if c.MoE == nil {
		return nil
	}
	kv := []gguf.KV{
		gguf.Uint32KV(llamaKey(a, "expert_count"), uint32(c.MoE.Experts)),
		gguf.Uint32KV(llamaKey(a, "expert_used_count"), uint32(c.MoE.TopK)),
	}
	if c.ModelType == ArchQwen3MoE {
		kv = append(kv, gguf.Uint32KV(llamaKey(a, "expert_feed_forward_length"), uint32(c.MoE.Inner)))
	}
	return kv
}

// moeStack is one of a sparse layer's GGUF tensors: the router (one
// source) or an expert matrix stacked over the experts.
type moeStack struct {
	gguf  string
	hf    []string // the HF tensors, in expert order
	shape []int    // each HF tensor's
	part  part
}

// moeStacks are layer l's router and stacked experts, in the file's order.
func moeStacks(c Config, l int) []moeStack {
	lay, m, C := c.llama().moe, c.MoE, c.NEmbd
	blk := fmt.Sprintf("blk.%d.", l)
	out := []moeStack{{gguf: blk + "ffn_gate_inp.weight", hf: []string{fmt.Sprintf(lay.router, l)}, shape: []int{m.Experts, C}, part: partRouter}}
	for _, s := range []struct {
		name, pat string
		shape     []int
		part      part
	}{{"gate", lay.gate, []int{m.Inner, C}, partExpertGate}, {"up", lay.up, []int{m.Inner, C}, partExpertUp}, {"down", lay.down, []int{C, m.Inner}, partExpertDown}} {
		st := moeStack{gguf: blk + "ffn_" + s.name + "_exps.weight", shape: s.shape, part: s.part}
		for e := range m.Experts {
			st.hf = append(st.hf, fmt.Sprintf(s.pat, l, e))
		}
		out = append(out, st)
	}
	return out
}

// gguf is the stack's GGUF shape and type for matrices of type typ.
func (s moeStack) ggufShape() []int {
	if s.part == partRouter {
		return s.shape
	}
	return append([]int{len(s.hf)}, s.shape...)
}

// moePlan is layer l's router and stacked experts for convert, each from
// its source tensors (checked and taken out of byName).
func moePlan(c Config, l int, byName map[string]*safetensors.Tensor, typ gguf.GGMLType, dtypes map[string]bool) ([]streamTensor, error) {
	var plan []streamTensor
	for _, s := range moeStacks(c, l) {
		var srcs []*safetensors.Tensor
		for _, name := range s.hf {
			t, ok := byName[name]
			if !ok {
				return nil, fmt.Errorf("missing tensor %q", name)
			}
			if len(t.Shape) != 2 || t.Shape[0] != s.shape[0] || t.Shape[1] != s.shape[1] {
				return nil, fmt.Errorf("tensor %q: shape %v, config.json implies %v", t.Name, t.Shape, s.shape)
			}
			delete(byName, name)
			dtypes[t.DType] = true
			srcs = append(srcs, t)
		}
		st := streamTensor{name: s.gguf, shape: s.ggufShape(), typ: weights.MatrixType(typ, s.shape[1])}
		if s.part == partRouter {
			st.src = srcs[0]
		} else {
			st.stack = srcs
		}
		plan = append(plan, st)
	}
	return plan, nil
}

// moeTensors is layer l's router and stacked experts from a loaded model,
// for WriteGGUF: HF's [out,in] rows of each matrix, the block holding
// them [in,out].
func moeTensors(m *Model, l int, typ gguf.GGMLType) ([]gguf.TensorData, error) {
	b := &m.h[l]
	var out []gguf.TensorData
	for _, s := range moeStacks(m.Config, l) {
		var vals []float32
		for e := range s.hf {
			var w kernels.Matrix
			switch s.part {
			case partRouter:
				w = b.moe.router
			case partExpertGate:
				w = b.moe.experts[e].gate
			case partExpertUp:
				w = b.moe.experts[e].up
			case partExpertDown:
				w = b.moe.experts[e].down
			}
			vals = append(vals, weights.Transpose(w.Float32s(), s.shape[1], s.shape[0])...)
		}
		td, err := weights.Tensor(s.gguf, s.ggufShape(), weights.MatrixType(typ, s.shape[1]), vals)
		if err != nil {
			return nil, err
		}
		out = append(out, td)
	}
	return out, nil
}

// ggufMoE reads a file's experts: {arch}.expert_count and
// expert_used_count, Qwen3-MoE's expert_feed_forward_length (Mixtral's
// experts are feed_forward_length wide). A llama file with experts is
// Mixtral, as llama.cpp's converter writes it. llama.cpp renormalises the
// chosen experts' weights of both, and has experts in every layer.
func ggufMoE(f *gguf.File, c *Config, fam *llamaFamily) error {
	k := func(key string) string { return llamaKey(fam.gguf(), key) }
	n, err := weights.OptNonNegative(f, k("expert_count"))
	if err != nil {
		return err
	}
	switch {
	case n <= 0 && fam.moe != nil:
		return fmt.Errorf("key %s: missing; a %s file has experts", k("expert_count"), fam.gguf())
	case n <= 0:
		return nil
	case fam.moe == nil && fam.name != ArchLlama:
		return fmt.Errorf("key %s: experts in a %s file are not implemented", k("expert_count"), fam.gguf())
	case fam.moe == nil:
		c.ModelType = ArchMixtral
	}
	m := &MoE{Experts: int(n), Inner: c.NInner, NormTopK: true}
	if m.TopK, err = weights.Dim(f, k("expert_used_count")); err != nil {
		return err
	}
	if c.ModelType == ArchQwen3MoE {
		if m.Inner, err = weights.Dim(f, k("expert_feed_forward_length")); err != nil {
			return err
		}
	}
	if m.Experts > maxDim || m.TopK > m.Experts {
		return fmt.Errorf("key %s: value %d for %d experts", k("expert_used_count"), m.TopK, m.Experts)
	}
	c.MoE = m
	return nil
}

// loadExperts reads layer l's router and stacked experts into its
// moeBlock, each expert's matrix decoded to float32 (float16 bits for a
// Float16 model, bfloat16 bits for a BFloat16 one); a quantised file's
// experts are dequantised, not held quantised as its dense matrices are.
func (gl *llamaGGUFLoader) loadExperts(l int) error {
	m := gl.ld.m
	for _, s := range moeStacks(m.Config, l) {
		t, ok := gl.f.Tensor(s.gguf)
		if !ok {
			return fmt.Errorf("missing tensor %q", s.gguf)
		}
		if err := weights.CheckTensor(t, weights.Dims(s.ggufShape())); err != nil {
			return err
		}
		raw, err := gl.f.TensorData(t.Name)
		if err != nil {
			return err
		}
		gl.ld.dtypes[t.Type.String()] = true
		vals, err := (weights.Part{Info: t, Raw: raw, Rows: s.shape[0]}).Float32s()
		if err != nil {
			return err
		}
		if gl.release != nil {
			gl.release(raw)
		}
		n := s.shape[0] * s.shape[1]
		for e, name := range s.hf {
			v := vals[e*n : (e+1)*n]
			p := llamaParam{hf: name, shape: s.shape, part: s.part, expert: e}
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
					return fmt.Errorf("tensor %q: %w", s.gguf, err)
				}
				if t.Type != gguf.GGMLTypeF16 {
					m.roundedToF16 = true
				}
				v = nil
			default:
				v = slices.Clone(v)
			}
			if err := gl.ld.placeExpert(p, v, h); err != nil {
				return err
			}
		}
	}
	return nil
}
