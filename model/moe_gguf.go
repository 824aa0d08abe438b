package model

import (
	"fmt"

	"github.com/llorch/llorch-check/kernels"
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
func moeKeys(c Config, a string) []KV {
	if c.MoE == nil {
		return nil
	}
	kv := []KV{
		{llamaKey(a, "expert_count"), uint32(c.MoE.Experts)},
		{llamaKey(a, "expert_used_count"), uint32(c.MoE.TopK)},
	}
	if c.ModelType == ArchQwen3MoE {
		kv = append(kv, KV{llamaKey(a, "expert_feed_forward_length"), uint32(c.MoE.Inner)})
	}
	return kv
}

// ExpertStack is one of a sparse layer's GGUF tensors: the router (one
// source) or an expert matrix stacked over the experts.
type ExpertStack struct {
	GGUF  string
	HF    []string // the HF tensors, in expert order
	Shape []int    // each HF tensor's
	part  part
}

// ExpertStacks are layer l's router and stacked experts, in the file's
// order.
func (c Config) ExpertStacks(l int) []ExpertStack {
	lay, m, C := c.llama().moe, c.MoE, c.NEmbd
	blk := fmt.Sprintf("blk.%d.", l)
	out := []ExpertStack{{GGUF: blk + "ffn_gate_inp.weight", HF: []string{fmt.Sprintf(lay.router, l)}, Shape: []int{m.Experts, C}, part: partRouter}}
	for _, s := range []struct {
		name, pat string
		shape     []int
		part      part
	}{{"gate", lay.gate, []int{m.Inner, C}, partExpertGate}, {"up", lay.up, []int{m.Inner, C}, partExpertUp}, {"down", lay.down, []int{C, m.Inner}, partExpertDown}} {
		st := ExpertStack{GGUF: blk + "ffn_" + s.name + "_exps.weight", Shape: s.shape, part: s.part}
		for e := range m.Experts {
			st.HF = append(st.HF, fmt.Sprintf(s.pat, l, e))
		}
		out = append(out, st)
	}
	return out
}

// GGUFShape is the stack's row-major shape in a GGUF file: the router's
// own, [experts, rows, cols] for an expert matrix.
func (s ExpertStack) GGUFShape() []int {
	if s.part == partRouter {
		return s.Shape
	}
	return append([]int{len(s.HF)}, s.Shape...)
}

// Param is the parameter of expert e's matrix (the router's for e = 0).
func (s ExpertStack) Param(e int) Param {
	return Param{hf: s.HF[e], gguf: s.GGUF, shape: s.Shape, part: s.part, expert: e}
}

// convertTensor is the stack for ConvertLayout, from its HF tensors.
func (s ExpertStack) convertTensor() GGUFTensor {
	return GGUFTensor{Name: s.GGUF, Shape: s.GGUFShape(), Matrix: true, Source: s.HF}
}

// moeTensors are layer l's router and stacked experts with their values,
// HF's [out,in] (the model holds them [in,out]).
func moeTensors(m *Model, l int) []GGUFTensor {
	b := &m.h[l]
	var out []GGUFTensor
	for _, s := range m.Config.ExpertStacks(l) {
		var vals []float32
		for e := range s.HF {
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
			vals = append(vals, kernels.Transpose(w.Float32s(), s.Shape[1], s.Shape[0])...)
		}
		t := s.convertTensor()
		t.Source, t.Values = nil, vals
		out = append(out, t)
	}
	return out
}

// ggufMoE reads a file's experts: {arch}.expert_count and
// expert_used_count, Qwen3-MoE's expert_feed_forward_length (Mixtral's
// experts are feed_forward_length wide). A llama file with experts is
// Mixtral, as llama.cpp's converter writes it. llama.cpp renormalises the
// chosen experts' weights of both, and has experts in every layer.
func ggufMoE(md Metadata, c *Config, fam *llamaFamily) error {
	k := func(key string) string { return llamaKey(fam.gguf(), key) }
	n, err := md.OptNonNegative(k("expert_count"))
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
	if m.TopK, err = md.Dim(k("expert_used_count")); err != nil {
		return err
	}
	if c.ModelType == ArchQwen3MoE {
		if m.Inner, err = md.Dim(k("expert_feed_forward_length")); err != nil {
			return err
		}
	}
	if m.Experts > maxDim || m.TopK > m.Experts {
		return fmt.Errorf("key %s: value %d for %d experts", k("expert_used_count"), m.TopK, m.Experts)
	}
	c.MoE = m
	return nil
}
