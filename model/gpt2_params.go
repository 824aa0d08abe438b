package model

import "fmt"

// GPT-2's parameter table. Its names are HF's without "transformer.";
// its shapes the model's, Conv1D matrices [in,out]. llama.cpp's converter
// transposes the Conv1D matrices to PyTorch Linear's [out,in] before
// writing (transposed), and GGUF lists dims fastest-varying first, so a
// transposed [in,out] matrix has GGUF dims [in,out] and an untransposed
// one (the embeddings) its shape reversed.

// gpt2Params lists every parameter of GPT-2 in llama.cpp's order (HF's
// too); m.Config and m.h must be set. position_embd is a matrix llama.cpp's
// converter never quantises; the LM head (lm_head.weight, output.weight)
// is tied to wte and so not a parameter of its own: each loader checks it.
func (m *Model) gpt2Params() []Param {
	c := m.Config
	C, I, V, P := c.NEmbd, c.NInner, c.VocabSize, c.NPositions
	ps := []Param{
		{hf: "wte.weight", gguf: "token_embd.weight", shape: []int{V, C}, dst: mat(&m.wte)},
		{hf: "wpe.weight", gguf: "position_embd.weight", shape: []int{P, C}, dst: vec(&m.wpe)},
	}
	for i := range m.h {
		b := &m.h[i]
		for _, p := range []Param{
			{hf: "ln_1.weight", gguf: "attn_norm.weight", shape: []int{C}, dst: vec(&b.ln1W)},
			{hf: "ln_1.bias", gguf: "attn_norm.bias", shape: []int{C}, dst: vec(&b.ln1B)},
			{hf: "attn.c_attn.weight", gguf: "attn_qkv.weight", shape: []int{C, 3 * C}, transposed: true, dst: mat(&b.attnW)},
			{hf: "attn.c_attn.bias", gguf: "attn_qkv.bias", shape: []int{3 * C}, dst: vec(&b.attnB)},
			{hf: "attn.c_proj.weight", gguf: "attn_output.weight", shape: []int{C, C}, transposed: true, dst: mat(&b.projW)},
			{hf: "attn.c_proj.bias", gguf: "attn_output.bias", shape: []int{C}, dst: vec(&b.projB)},
			{hf: "ln_2.weight", gguf: "ffn_norm.weight", shape: []int{C}, dst: vec(&b.ln2W)},
			{hf: "ln_2.bias", gguf: "ffn_norm.bias", shape: []int{C}, dst: vec(&b.ln2B)},
			{hf: "mlp.c_fc.weight", gguf: "ffn_up.weight", shape: []int{C, I}, transposed: true, dst: mat(&b.fcW)},
			{hf: "mlp.c_fc.bias", gguf: "ffn_up.bias", shape: []int{I}, dst: vec(&b.fcB)},
			{hf: "mlp.c_proj.weight", gguf: "ffn_down.weight", shape: []int{I, C}, transposed: true, dst: mat(&b.mlpW)},
			{hf: "mlp.c_proj.bias", gguf: "ffn_down.bias", shape: []int{C}, dst: vec(&b.mlpB)},
		} {
			p.hf, p.gguf = fmt.Sprintf("h.%d.%s", i, p.hf), fmt.Sprintf("blk.%d.%s", i, p.gguf)
			ps = append(ps, p)
		}
	}
	return append(ps,
		Param{hf: "ln_f.weight", gguf: "output_norm.weight", shape: []int{C}, dst: vec(&m.lnfW)},
		Param{hf: "ln_f.bias", gguf: "output_norm.bias", shape: []int{C}, dst: vec(&m.lnfB)},
	)
}
