package model

import (
	"fmt"

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
