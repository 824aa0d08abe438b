package model

import (
	"fmt"
	"slices"
)

// GGUF metadata keys of llama.cpp's "gpt2" architecture, and llorch's own.
const (
	ggufArch          = "gpt2"
	keyArchitecture   = "general.architecture"
	keyContextLength  = "gpt2.context_length"
	keyEmbeddingLen   = "gpt2.embedding_length"
	keyFeedForwardLen = "gpt2.feed_forward_length"
	keyBlockCount     = "gpt2.block_count"
	keyHeadCount      = "gpt2.attention.head_count"
	keyLayerNormEps   = "gpt2.attention.layer_norm_epsilon"
	keyBOS            = "tokenizer.ggml.bos_token_id"
	keyEOS            = "tokenizer.ggml.eos_token_id"
	keyTokens         = "tokenizer.ggml.tokens"

	// KeySourceSHA256 records, in files written by llorch-check convert,
	// the lower-case hex sha256 of the HF model.safetensors the file was
	// converted from. A reference set made from those HF weights is then
	// accepted for the GGUF model (see checkpoints.Run).
	KeySourceSHA256 = "llorch.source.sha256"
	// KeySourceDType records the HF weights' stored dtype ("F16", ...).
	KeySourceDType = "llorch.source.dtype"
)

// ggufOutput is llama.cpp's optional LM head; GPT-2 ties it to token_embd.
const ggufOutput = "output.weight"

// ggufParam maps one GGUF tensor to a model parameter.
//
// shape is the parameter's row-major shape as the model holds it; Conv1D
// matrices are [in,out]. llama.cpp's converter transposes those to
// PyTorch Linear's [out,in] before writing (transposed), and GGUF lists
// dims fastest-varying first, so a transposed [in,out] matrix has GGUF dims
// [in,out] and an untransposed one (the embeddings) its shape reversed.
type ggufParam struct {
	name       string
	shape      []int
	transposed bool
	dst        slot
}

// dims is the tensor's GGUF ne: the stored row-major shape, reversed.
func (p ggufParam) dims() []uint64 {
	stored := slices.Clone(p.shape)
	if p.transposed {
		stored[0], stored[1] = stored[1], stored[0]
	}
	return ggufDims(stored)
}

// ggufParams lists every tensor of the gpt2 layout in llama.cpp's order;
// m.Config and m.h must be set. position_embd is kept apart because
// llama.cpp's converter never quantises it.
func (m *Model) ggufParams() []ggufParam {
	c := m.Config
	C, I, V, P := c.NEmbd, c.NInner, c.VocabSize, c.NPositions
	ps := []ggufParam{
		{"token_embd.weight", []int{V, C}, false, mat(&m.wte)},
		{"position_embd.weight", []int{P, C}, false, vec(&m.wpe)},
	}
	for i := range m.h {
		b := &m.h[i]
		p := fmt.Sprintf("blk.%d.", i)
		ps = append(ps,
			ggufParam{p + "attn_norm.weight", []int{C}, false, vec(&b.ln1W)},
			ggufParam{p + "attn_norm.bias", []int{C}, false, vec(&b.ln1B)},
			ggufParam{p + "attn_qkv.weight", []int{C, 3 * C}, true, mat(&b.attnW)},
			ggufParam{p + "attn_qkv.bias", []int{3 * C}, false, vec(&b.attnB)},
			ggufParam{p + "attn_output.weight", []int{C, C}, true, mat(&b.projW)},
			ggufParam{p + "attn_output.bias", []int{C}, false, vec(&b.projB)},
			ggufParam{p + "ffn_norm.weight", []int{C}, false, vec(&b.ln2W)},
			ggufParam{p + "ffn_norm.bias", []int{C}, false, vec(&b.ln2B)},
			ggufParam{p + "ffn_up.weight", []int{C, I}, true, mat(&b.fcW)},
			ggufParam{p + "ffn_up.bias", []int{I}, false, vec(&b.fcB)},
			ggufParam{p + "ffn_down.weight", []int{I, C}, true, mat(&b.mlpW)},
			ggufParam{p + "ffn_down.bias", []int{C}, false, vec(&b.mlpB)},
		)
	}
	return append(ps,
		ggufParam{"output_norm.weight", []int{C}, false, vec(&m.lnfW)},
		ggufParam{"output_norm.bias", []int{C}, false, vec(&m.lnfB)},
	)
}

// transpose returns the [cols,rows] transpose of a row-major [rows,cols].
// It goes in 32×32 tiles, so that both sides stay in cache: element by
// element, every write of a 768-row matrix's column missed.
func transpose[T float32 | uint16](src []T, rows, cols int) []T {
	const tile = 32
	dst := make([]T, len(src))
	for r0 := 0; r0 < rows; r0 += tile {
		for c0 := 0; c0 < cols; c0 += tile {
			for r := r0; r < min(r0+tile, rows); r++ {
				for c := c0; c < min(c0+tile, cols); c++ {
					dst[c*rows+r] = src[r*cols+c]
				}
			}
		}
	}
	return dst
}
