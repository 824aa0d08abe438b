package model

// GPT-2 in llama.cpp's gpt2 layout: the general.architecture,
// general.file_type and gpt2.* hyper-parameter keys, the BOS and EOS
// token ids (the only tokenizer keys the config knows; a tokenizer's
// follow all of these), and every tensor, with the Conv1D matrices
// transposed as llama.cpp's converter stores them. output.weight follows
// token_embd as its copy, as llama.cpp's converter writes GPT-2's tied
// head (its gpt2 loaders of early 2025 require the tensor), or as the
// model's own untied head. position_embd stays F32, as llama.cpp's
// converter keeps it.

func (gpt2Family) ggufKeys(c Config, ftype uint32) ([]KV, error) { return gpt2Keys(c, ftype), nil }

func (gpt2Family) ggufTensors(m *Model) ([]GGUFTensor, error) {
	var out []GGUFTensor
	for _, p := range m.gpt2Params() {
		t := gpt2Tensor(p)
		t.Values = p.dst.float32s()
		out = append(out, t)
		if p.gguf == "token_embd.weight" {
			head := t
			head.Name = ggufOutput
			if !m.TiedHead() {
				head.Values = mat(&m.lmW).float32s()
			}
			out = append(out, head)
		}
	}
	return out, nil
}

func (gpt2Family) convertTensors(c Config) ([]GGUFTensor, error) {
	var out []GGUFTensor
	for _, p := range NewModel(c).gpt2Params() {
		t := gpt2Tensor(p)
		t.Source = []string{p.hf}
		out = append(out, t)
		if p.gguf == "token_embd.weight" {
			// The tied head, as GGUFLayout writes it.
			t.Name = ggufOutput
			out = append(out, t)
		}
	}
	return out, nil
}

func (gpt2Family) tokenizerLast() bool { return true }

// gpt2Tensor is parameter p's GGUF tensor, without its values: the
// matrices but position_embd in the file's matrix type.
func gpt2Tensor(p Param) GGUFTensor {
	stored := p.Stored()
	return GGUFTensor{Name: p.gguf, Shape: stored, Matrix: len(stored) == 2 && p.gguf != "position_embd.weight", Transpose: p.transposed}
}

// gpt2Keys are GGUF's keys for a gpt2 config: general.architecture,
// general.file_type (ftype) and general.quantization_version, the gpt2.*
// hyper-parameters and the BOS and EOS ids.
func gpt2Keys(c Config, ftype uint32) []KV {
	return []KV{
		{keyArchitecture, ggufArch},
		{"general.file_type", ftype},
		// gguf-py's GGML_QUANT_VERSION, which its converter always writes.
		{"general.quantization_version", uint32(2)},
		{keyContextLength, uint32(c.NPositions)},
		{keyEmbeddingLen, uint32(c.NEmbd)},
		{keyFeedForwardLen, uint32(c.NInner)},
		{keyBlockCount, uint32(c.NLayer)},
		{keyHeadCount, uint32(c.NHead)},
		{keyLayerNormEps, float32(c.LayerNormEpsilon)},
		{keyBOS, uint32(c.BOSTokenID)},
		{keyEOS, uint32(c.EOSTokenID)},
	}
}
