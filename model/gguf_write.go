package model

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/weights"
)

// GGUFFile is what a GGUF file written from a model (WriteGGUF) holds
// beside the model's own keys and tensors (GGUF).
type GGUFFile struct {
	Type gguf.GGMLType // the 2-D matrices' type: F32, F16, BF16 or Q8_0 (GGUF)
	Name string        // general.name, after general.architecture; none when empty

	// Tokenizer are the tokenizer.* keys: GPT-2's follow the model's keys,
	// the Llama family's take their places among them (WithTokenizer).
	Tokenizer []gguf.KV

	// SourceSHA256 is the sha256 of the HF weights the model was loaded
	// from; when set it is written last, with their dtype
	// (KeySourceSHA256, KeySourceDType), so that reference sets made from
	// those weights accept the file.
	SourceSHA256 string
}

// GGUFWritten is what WriteGGUF wrote.
type GGUFWritten struct {
	Tensors int
	Types   string // the tensors by type, as "98 F32, 50 F16"
	Bytes   int64  // the file's size
}

// WriteGGUF writes the model as a GGUF file at path, atomically
// (gguf.WriteFile), in llama.cpp's converter's order: architecture, name,
// hyper-parameters, tokenizer, then llorch's own keys.
func (m *Model) WriteGGUF(path string, f GGUFFile) (GGUFWritten, error) {
	kv, tensors, err := m.GGUF(f.Type)
	if err != nil {
		return GGUFWritten{}, err
	}
	kv = fileKeys(m.Config, kv, f, m.WeightsDType)
	if err := gguf.WriteFile(path, kv, tensors); err != nil {
		return GGUFWritten{}, err
	}
	types := make([]gguf.GGMLType, len(tensors))
	for i, t := range tensors {
		types[i] = t.Type
	}
	return written(path, types), nil
}

// fileKeys are a file's keys: the model's (kv, from GGUF) with the name
// after general.architecture, the tokenizer's (after GPT-2's keys, among
// the Llama family's: WithTokenizer) and the source's sha256 and dtype
// last.
func fileKeys(c Config, kv []gguf.KV, f GGUFFile, dtype string) []gguf.KV {
	if f.Name != "" {
		kv = slices.Insert(kv, 1, gguf.StringKV("general.name", f.Name))
	}
	kv = c.family().withTokenizer(kv, f.Tokenizer)
	if f.SourceSHA256 != "" {
		kv = append(kv, gguf.StringKV(KeySourceSHA256, f.SourceSHA256), gguf.StringKV(KeySourceDType, dtype))
	}
	return kv
}

// written describes the file at path whose tensors have the given types.
func written(path string, types []gguf.GGMLType) GGUFWritten {
	w := GGUFWritten{Tensors: len(types)}
	counts := map[gguf.GGMLType]int{}
	for _, t := range types {
		counts[t]++
	}
	var parts []string
	for _, t := range []gguf.GGMLType{gguf.GGMLTypeF32, gguf.GGMLTypeF16, gguf.GGMLTypeBF16, gguf.GGMLTypeQ8_0} {
		if counts[t] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[t], t))
		}
	}
	w.Types = strings.Join(parts, ", ")
	if fi, err := os.Stat(path); err == nil {
		w.Bytes = fi.Size()
	}
	return w
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
// typ (F32, F16, BF16 or Q8_0) applies to the 2-D matrices, token_embd included,
// as in llama.cpp's convert_hf_to_gguf.py; 1-D tensors (norms, biases) and
// position_embd stay F32 there and here. A Q8_0 matrix whose rows are not
// whole blocks of 32 falls back to F16, as llama.cpp does.
func (m *Model) GGUF(typ gguf.GGMLType) ([]gguf.KV, []gguf.TensorData, error) {
	ftype, err := weights.FileType(typ)
	if err != nil {
		return nil, nil, err
	}
	return m.Config.family().ggufTensors(m, typ, ftype)
}

// gpt2GGUF is GGUF for gpt2.
func (m *Model) gpt2GGUF(typ gguf.GGMLType, ftype uint32) ([]gguf.KV, []gguf.TensorData, error) {
	kv := gpt2Keys(m.Config, ftype)
	var tensors []gguf.TensorData
	for _, p := range m.gpt2Params() {
		stored := p.stored()
		t := gguf.GGMLTypeF32
		if len(stored) == 2 && p.gguf != "position_embd.weight" {
			t = weights.MatrixType(typ, stored[1])
		}
		vals := p.dst.float32s()
		if p.transposed {
			vals = weights.Transpose(vals, p.shape[0], p.shape[1])
		}
		td, err := weights.Tensor(p.gguf, stored, t, vals)
		if err != nil {
			return nil, nil, err
		}
		tensors = append(tensors, td)
		if p.gguf == "token_embd.weight" {
			out := td
			out.Name = ggufOutput
			if !m.TiedHead() {
				if out, err = weights.Tensor(ggufOutput, stored, t, mat(&m.lmW).float32s()); err != nil {
					return nil, nil, err
				}
			}
			tensors = append(tensors, out)
		}
	}
	return kv, tensors, nil
}

// gpt2Keys are GGUF's keys for a gpt2 config: general.architecture,
// general.file_type (ftype) and general.quantization_version, the gpt2.*
// hyper-parameters and the BOS and EOS ids.
func gpt2Keys(c Config, ftype uint32) []gguf.KV {
	return []gguf.KV{
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
}
