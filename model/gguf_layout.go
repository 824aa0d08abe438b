package model

// KV is one GGUF metadata key a family writes, its value a Go value of
// the GGUF type it is written as: string, uint32, float32, float64 or
// []uint32. Package loader encodes it; the keys, their order and their
// values are the family's.
type KV struct {
	Key   string
	Value any
}

// GGUFTensor is one tensor of a model in llama.cpp's GGUF layout: its name,
// its row-major shape as the file stores it, whether it takes the file's
// matrix type (F16, BF16, Q8_0; otherwise F32), and its values as HF
// holds the tensor: Values when written from a loaded model (GGUFLayout)
// or made from the config; when converted from an HF checkpoint
// (ConvertLayout), the HF tensors Source names (several: a stack of
// experts, [len(Source), rows, cols]). Transpose, RopeHeads and PlusOne
// are the changes llama.cpp's converter makes to those values, which the
// writer (package loader) applies.
type GGUFTensor struct {
	Name   string
	Shape  []int
	Matrix bool
	Values []float32

	Source []string
	// Transpose: the values are Shape's transpose (GPT-2's Conv1D [in,out]).
	Transpose bool
	// RopeHeads: the rows are permuted for llama.cpp's rope, row r going
	// to weights.RopeRow(r, rows, RopeHeads).
	RopeHeads int
	// PlusOne: 1 is added to each value, in float32 (Gemma's norms, which
	// GGUF stores as 1 + w, as the model holds them).
	PlusOne bool
}

// GGUFKeys are the GGUF keys of a model of c in llama.cpp's layout for
// its architecture, general.file_type ftype among them; an error for a
// config that layout cannot say.
func GGUFKeys(c Config, ftype uint32) ([]KV, error) { return c.family().ggufKeys(c, ftype) }

// GGUFLayout is the model in llama.cpp's layout for its architecture: its
// keys (GGUFKeys) and every tensor with its values, in the converter's
// order.
func (m *Model) GGUFLayout(ftype uint32) ([]KV, []GGUFTensor, error) {
	kv, err := GGUFKeys(m.Config, ftype)
	if err != nil {
		return nil, nil, err
	}
	ts, err := m.Config.family().ggufTensors(m)
	if err != nil {
		return nil, nil, err
	}
	return kv, ts, nil
}

// ConvertLayout is GGUFLayout's tensors for a model of c, each from the HF
// tensors it is made of rather than from a loaded model.
func ConvertLayout(c Config) ([]GGUFTensor, error) { return c.family().convertTensors(c) }

// GGUFTokenizerLast says a tokenizer's keys follow all of the model's in
// its GGUF file (llama.cpp's gpt2), rather than taking their places among
// them before llorch's own.
func (c Config) GGUFTokenizerLast() bool { return c.family().tokenizerLast() }
