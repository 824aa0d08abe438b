package model

import (
	"fmt"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/weights"
)

// llama.cpp's llama_ftype values for general.file_type.
var fileTypes = map[gguf.GGMLType]uint32{
	gguf.GGMLTypeF32:  0, // LLAMA_FTYPE_ALL_F32
	gguf.GGMLTypeF16:  1, // LLAMA_FTYPE_MOSTLY_F16
	gguf.GGMLTypeQ8_0: 7, // LLAMA_FTYPE_MOSTLY_Q8_0
}

// GGUF returns the model as llama.cpp lays out its architecture (a
// Llama-family model: llamaGGUF). For gpt2: the
// general.architecture, general.file_type and gpt2.* hyper-parameter keys,
// the BOS and EOS token ids (the only tokenizer keys the config knows),
// and every tensor, with the Conv1D matrices transposed as llama.cpp's
// converter stores them. output.weight follows token_embd as its copy,
// as llama.cpp's converter writes GPT-2's tied head (its gpt2 loaders of
// early 2025 require the tensor), or as the model's own untied head.
//
// typ (F32, F16 or Q8_0) applies to the 2-D matrices, token_embd included,
// as in llama.cpp's convert_hf_to_gguf.py; 1-D tensors (norms, biases) and
// position_embd stay F32 there and here. A Q8_0 matrix whose rows are not
// whole blocks of 32 falls back to F16, as llama.cpp does.
func (m *Model) GGUF(typ gguf.GGMLType) ([]gguf.KV, []gguf.TensorData, error) {
	ftype, ok := fileTypes[typ]
	if !ok {
		return nil, nil, fmt.Errorf("GGUF tensor type %s is not supported (F32, F16, Q8_0)", typ)
	}
	if m.Config.IsLlama() {
		return m.llamaGGUF(typ, ftype)
	}
	c := m.Config
	kv := []gguf.KV{
		{Key: keyArchitecture, Value: gguf.Value{Type: gguf.TypeString, V: ggufArch}},
		{Key: "general.file_type", Value: gguf.Value{Type: gguf.TypeUint32, V: ftype}},
		// gguf-py's GGML_QUANT_VERSION, which its converter always writes.
		{Key: "general.quantization_version", Value: gguf.Value{Type: gguf.TypeUint32, V: uint32(2)}},
		{Key: keyContextLength, Value: gguf.Value{Type: gguf.TypeUint32, V: uint32(c.NPositions)}},
		{Key: keyEmbeddingLen, Value: gguf.Value{Type: gguf.TypeUint32, V: uint32(c.NEmbd)}},
		{Key: keyFeedForwardLen, Value: gguf.Value{Type: gguf.TypeUint32, V: uint32(c.NInner)}},
		{Key: keyBlockCount, Value: gguf.Value{Type: gguf.TypeUint32, V: uint32(c.NLayer)}},
		{Key: keyHeadCount, Value: gguf.Value{Type: gguf.TypeUint32, V: uint32(c.NHead)}},
		{Key: keyLayerNormEps, Value: gguf.Value{Type: gguf.TypeFloat32, V: float32(c.LayerNormEpsilon)}},
		{Key: keyBOS, Value: gguf.Value{Type: gguf.TypeUint32, V: uint32(c.BOSTokenID)}},
		{Key: keyEOS, Value: gguf.Value{Type: gguf.TypeUint32, V: uint32(c.EOSTokenID)}},
	}
	var tensors []gguf.TensorData
	for _, p := range m.gpt2Params() {
		t := gguf.GGMLTypeF32
		if len(p.shape) == 2 && p.gguf != "position_embd.weight" {
			t = typ
			if t == gguf.GGMLTypeQ8_0 && p.ggufDims()[0]%32 != 0 {
				t = gguf.GGMLTypeF16
			}
		}
		vals := p.dst.float32s()
		if p.transposed {
			vals = weights.Transpose(vals, p.shape[0], p.shape[1])
		}
		data, err := gguf.EncodeFloat32(t, vals)
		if err != nil {
			return nil, nil, fmt.Errorf("tensor %s: %w", p.gguf, err)
		}
		tensors = append(tensors, gguf.TensorData{Name: p.gguf, Dims: p.ggufDims(), Type: t, Data: data})
		if p.gguf == "token_embd.weight" {
			out := gguf.TensorData{Name: ggufOutput, Dims: p.ggufDims(), Type: t, Data: data}
			if !m.TiedHead() {
				if out.Data, err = gguf.EncodeFloat32(t, mat(&m.lmW).float32s()); err != nil {
					return nil, nil, fmt.Errorf("tensor %s: %w", ggufOutput, err)
				}
			}
			tensors = append(tensors, out)
		}
	}
	return kv, tensors, nil
}
