package model

import (
	"fmt"
	"slices"

	"github.com/llorch/llorch-check/weights"
)

// gpt2Param is one tensor of a GPT-2 checkpoint: its name in HF's layout
// (without "transformer.") and in llama.cpp's GGUF layout, its row-major
// shape as the model holds it (Conv1D matrices are [in,out]), whether
// GGUF stores it transposed, and where it goes. The one table the HF
// loader, the GGUF loader and the GGUF writer read.
//
// llama.cpp's converter transposes the Conv1D matrices to PyTorch
// Linear's [out,in] before writing (transposed), and GGUF lists dims
// fastest-varying first, so a transposed [in,out] matrix has GGUF dims
// [in,out] and an untransposed one (the embeddings) its shape reversed.
type gpt2Param struct {
	hf, gguf   string
	shape      []int
	transposed bool
	dst        dest
}

// stored is the tensor's row-major shape in a GGUF file.
func (p gpt2Param) stored() []int {
	stored := slices.Clone(p.shape)
	if p.transposed {
		stored[0], stored[1] = stored[1], stored[0]
	}
	return stored
}

// ggufDims is the tensor's GGUF ne: the stored shape, reversed.
func (p gpt2Param) ggufDims() []uint64 { return weights.Dims(p.stored()) }

// gpt2Params lists every parameter of GPT-2 in llama.cpp's order (HF's
// too); m.Config and m.h must be set. position_embd is a matrix llama.cpp's
// converter never quantises; the LM head (lm_head.weight, output.weight)
// is tied to wte and so not a parameter of its own: each loader checks it.
func (m *Model) gpt2Params() []gpt2Param {
	c := m.Config
	C, I, V, P := c.NEmbd, c.NInner, c.VocabSize, c.NPositions
	ps := []gpt2Param{
		{"wte.weight", "token_embd.weight", []int{V, C}, false, mat(&m.wte)},
		{"wpe.weight", "position_embd.weight", []int{P, C}, false, vec(&m.wpe)},
	}
	for i := range m.h {
		b := &m.h[i]
		for _, p := range []gpt2Param{
			{"ln_1.weight", "attn_norm.weight", []int{C}, false, vec(&b.ln1W)},
			{"ln_1.bias", "attn_norm.bias", []int{C}, false, vec(&b.ln1B)},
			{"attn.c_attn.weight", "attn_qkv.weight", []int{C, 3 * C}, true, mat(&b.attnW)},
			{"attn.c_attn.bias", "attn_qkv.bias", []int{3 * C}, false, vec(&b.attnB)},
			{"attn.c_proj.weight", "attn_output.weight", []int{C, C}, true, mat(&b.projW)},
			{"attn.c_proj.bias", "attn_output.bias", []int{C}, false, vec(&b.projB)},
			{"ln_2.weight", "ffn_norm.weight", []int{C}, false, vec(&b.ln2W)},
			{"ln_2.bias", "ffn_norm.bias", []int{C}, false, vec(&b.ln2B)},
			{"mlp.c_fc.weight", "ffn_up.weight", []int{C, I}, true, mat(&b.fcW)},
			{"mlp.c_fc.bias", "ffn_up.bias", []int{I}, false, vec(&b.fcB)},
			{"mlp.c_proj.weight", "ffn_down.weight", []int{I, C}, true, mat(&b.mlpW)},
			{"mlp.c_proj.bias", "ffn_down.bias", []int{C}, false, vec(&b.mlpB)},
		} {
			p.hf, p.gguf = fmt.Sprintf("h.%d.%s", i, p.hf), fmt.Sprintf("blk.%d.%s", i, p.gguf)
			ps = append(ps, p)
		}
	}
	return append(ps,
		gpt2Param{"ln_f.weight", "output_norm.weight", []int{C}, false, vec(&m.lnfW)},
		gpt2Param{"ln_f.bias", "output_norm.bias", []int{C}, false, vec(&m.lnfB)},
	)
}
