package model

import "fmt"

// The Llama family's parameter table (Param): a tensor goes to a model
// vector, or to rows from row on of one of the block's fused matrices (q,
// k and v fill attnW; gate and up fill fcW).

// part says which of a layer's (or the model's) parameters a tensor fills.
type part int

const (
	partEmbed part = iota
	partNorm
	partHead
	partAttnNorm
	partQKV
	partQKVBias
	partQNorm
	partKNorm
	partO
	partOBias
	partFFNNorm
	partGateUp
	partGateUpBias
	partDown
	partDownBias
	partPostAttnNorm // Gemma's
	partPostFFNNorm
	// A sparse layer's (moe_config.go): the router and each expert's matrices.
	partRouter
	partExpertGate
	partExpertUp
	partExpertDown
)

// isNorm says the part is a norm's weight: Gemma's hold 1 + w.
func (p part) isNorm() bool {
	switch p {
	case partNorm, partAttnNorm, partQNorm, partKNorm, partFFNNorm, partPostAttnNorm, partPostFFNNorm:
		return true
	}
	return false
}

// llamaGlobals are the tensors outside the layers; the head only when
// untied.
func llamaGlobals(c Config) []Param {
	C, V := c.NEmbd, c.VocabSize
	ps := []Param{
		{hf: "embed_tokens.weight", gguf: "token_embd.weight", shape: []int{V, C}, part: partEmbed},
		{hf: "norm.weight", gguf: "output_norm.weight", shape: []int{C}, part: partNorm},
	}
	if !c.Tied {
		ps = append(ps, Param{hf: "lm_head.weight", gguf: "output.weight", shape: []int{V, C}, part: partHead})
	}
	return ps
}

// llamaLayer lists layer l's tensors, in llama.cpp's GGUF order.
func llamaLayer(c Config, l int) []Param {
	C, I, H, Hkv, D := c.NEmbd, c.NInner, c.NHead, c.KVHeads(), c.HeadDim()
	ps := []Param{{hf: "layers.%d.input_layernorm.weight", gguf: "blk.%d.attn_norm.weight", shape: []int{C}, part: partAttnNorm}}
	if c.FusedQKV {
		ps = append(ps, Param{hf: "layers.%d.self_attn.qkv_proj.weight", gguf: "blk.%d.attn_qkv.weight",
			shape: []int{(H + 2*Hkv) * D, C}, part: partQKV})
	} else {
		qRope, kRope := 0, 0
		if c.llama().llamaCppRope {
			qRope, kRope = H, Hkv
		}
		qkv := []struct {
			n         string
			rows, row int
			ropeHeads int
		}{{"q", H * D, 0, qRope}, {"k", Hkv * D, H * D, kRope}, {"v", Hkv * D, (H + Hkv) * D, 0}}
		for _, p := range qkv {
			ps = append(ps, Param{hf: "layers.%d.self_attn." + p.n + "_proj.weight", gguf: "blk.%d.attn_" + p.n + ".weight",
				shape: []int{p.rows, C}, part: partQKV, row: p.row, ropeHeads: p.ropeHeads})
		}
		// The biases after the three matrices, as pytorch/gguf_write.py
		// writes Qwen2's.
		for _, p := range qkv {
			if c.QKVBias {
				ps = append(ps, Param{hf: "layers.%d.self_attn." + p.n + "_proj.bias", gguf: "blk.%d.attn_" + p.n + ".bias",
					shape: []int{p.rows}, part: partQKVBias, row: p.row, ropeHeads: p.ropeHeads})
			}
		}
	}
	if c.QKNorm {
		ps = append(ps,
			Param{hf: "layers.%d.self_attn.q_norm.weight", gguf: "blk.%d.attn_q_norm.weight", shape: []int{D}, part: partQNorm},
			Param{hf: "layers.%d.self_attn.k_norm.weight", gguf: "blk.%d.attn_k_norm.weight", shape: []int{D}, part: partKNorm})
	}
	ps = append(ps, Param{hf: "layers.%d.self_attn.o_proj.weight", gguf: "blk.%d.attn_output.weight", shape: []int{C, H * D}, part: partO})
	if c.OBias {
		ps = append(ps, Param{hf: "layers.%d.self_attn.o_proj.bias", gguf: "blk.%d.attn_output.bias", shape: []int{C}, part: partOBias})
	}
	if c.Gemma.sandwich() {
		// Gemma's post_attention_layernorm follows the attention; its
		// pre_feedforward_layernorm is the others' post_attention_layernorm.
		ps = append(ps,
			Param{hf: "layers.%d.post_attention_layernorm.weight", gguf: "blk.%d.post_attention_norm.weight", shape: []int{C}, part: partPostAttnNorm},
			Param{hf: "layers.%d.pre_feedforward_layernorm.weight", gguf: "blk.%d.ffn_norm.weight", shape: []int{C}, part: partFFNNorm})
	} else {
		ps = append(ps, Param{hf: "layers.%d.post_attention_layernorm.weight", gguf: "blk.%d.ffn_norm.weight", shape: []int{C}, part: partFFNNorm})
	}
	switch {
	case c.Sparse(l): // the router and experts, after the names below are made
	case c.FusedQKV:
		// llama.cpp's phi3 keeps gate_up_proj whole as ffn_up.
		ps = append(ps, Param{hf: "layers.%d.mlp.gate_up_proj.weight", gguf: "blk.%d.ffn_up.weight", shape: []int{2 * I, C}, part: partGateUp})
	default:
		for _, p := range []struct {
			n   string
			row int
		}{{"gate", 0}, {"up", I}} {
			ps = append(ps, Param{hf: "layers.%d.mlp." + p.n + "_proj.weight", gguf: "blk.%d.ffn_" + p.n + ".weight",
				shape: []int{I, C}, part: partGateUp, row: p.row})
			if c.MLPBias {
				ps = append(ps, Param{hf: "layers.%d.mlp." + p.n + "_proj.bias", gguf: "blk.%d.ffn_" + p.n + ".bias",
					shape: []int{I}, part: partGateUpBias, row: p.row})
			}
		}
	}
	if !c.Sparse(l) {
		ps = append(ps, Param{hf: "layers.%d.mlp.down_proj.weight", gguf: "blk.%d.ffn_down.weight", shape: []int{C, I}, part: partDown})
		if c.MLPBias {
			ps = append(ps, Param{hf: "layers.%d.mlp.down_proj.bias", gguf: "blk.%d.ffn_down.bias", shape: []int{C}, part: partDownBias})
		}
	}
	if c.Gemma.sandwich() {
		ps = append(ps, Param{hf: "layers.%d.post_feedforward_layernorm.weight", gguf: "blk.%d.post_ffw_norm.weight", shape: []int{C}, part: partPostFFNNorm})
	}
	for i := range ps {
		ps[i].hf, ps[i].gguf = fmt.Sprintf(ps[i].hf, l), fmt.Sprintf(ps[i].gguf, l)
	}
	if c.Sparse(l) {
		ps = append(ps, moeParams(c, l)...)
	}
	return ps
}

// fusedRows is the row count of a block matrix (or vector) a part fills:
// the fused q|k|v and gate|up, or a single tensor's own.
func (c Config) fusedRows(p part) int {
	switch p {
	case partQKV, partQKVBias:
		return c.qkvLayout().width
	case partGateUp, partGateUpBias:
		return 2 * c.NInner
	}
	return 0
}
