package loader

import (
	"fmt"
	"github.com/llorch/llorch-check/kernels"
	"github.com/llorch/llorch-check/model"
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
	// (model.KeySourceSHA256, KeySourceDType), so that reference sets made from
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
func WriteGGUF(m *model.Model, path string, f GGUFFile) (GGUFWritten, error) {
	kv, tensors, err := GGUF(m, f.Type)
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
func fileKeys(c model.Config, kv []gguf.KV, f GGUFFile, dtype string) []gguf.KV {
	if f.Name != "" {
		kv = slices.Insert(kv, 1, gguf.StringKV("general.name", f.Name))
	}
	if c.GGUFTokenizerLast() {
		kv = append(kv, f.Tokenizer...)
	} else {
		kv = WithTokenizer(kv, f.Tokenizer)
	}
	if f.SourceSHA256 != "" {
		kv = append(kv, gguf.StringKV(model.KeySourceSHA256, f.SourceSHA256), gguf.StringKV(model.KeySourceDType, dtype))
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

// GGUF returns the model as llama.cpp lays out its architecture
// (model.GGUFLayout): its keys and every tensor, encoded. typ (F32, F16,
// BF16 or Q8_0) applies to the matrices, token_embd included, as in
// llama.cpp's convert_hf_to_gguf.py; 1-D tensors (norms, biases) and
// GPT-2's position_embd stay F32 there and here. A Q8_0 matrix whose rows
// are not whole blocks of 32 falls back to F16, as llama.cpp does.
func GGUF(m *model.Model, typ gguf.GGMLType) ([]gguf.KV, []gguf.TensorData, error) {
	ftype, err := weights.FileType(typ)
	if err != nil {
		return nil, nil, err
	}
	keys, ts, err := m.GGUFLayout(ftype)
	if err != nil {
		return nil, nil, err
	}
	kv, err := encodeKeys(keys)
	if err != nil {
		return nil, nil, err
	}
	tensors := make([]gguf.TensorData, len(ts))
	for i, t := range ts {
		if tensors[i], err = weights.Tensor(t.Name, t.Shape, tensorType(t, typ), layoutValues(t, t.Values)); err != nil {
			return nil, nil, err
		}
	}
	return kv, tensors, nil
}

// tensorType is the GGUF type of tensor t in a file of type typ.
func tensorType(t model.GGUFTensor, typ gguf.GGMLType) gguf.GGMLType {
	if !t.Matrix {
		return gguf.GGMLTypeF32
	}
	return weights.MatrixType(typ, t.Shape[len(t.Shape)-1])
}

// layoutValues are vals, tensor t's values as HF holds them, as the GGUF
// file stores them: transposed, or with llama's q and k rows permuted for
// llama.cpp's rope.
func layoutValues(t model.GGUFTensor, vals []float32) []float32 {
	switch {
	case t.Transpose:
		return kernels.Transpose(vals, t.Shape[1], t.Shape[0])
	case t.RopeHeads > 0:
		rows := t.Shape[0]
		return weights.PermuteRows(vals, rows, len(vals)/rows, func(r int) int { return weights.RopeRow(r, rows, t.RopeHeads) }, func(r int) int { return r })
	}
	return vals
}

// encodeKeys are a family's keys (model.KV) as GGUF's.
func encodeKeys(keys []model.KV) ([]gguf.KV, error) {
	kv := make([]gguf.KV, len(keys))
	for i, e := range keys {
		switch v := e.Value.(type) {
		case string:
			kv[i] = gguf.StringKV(e.Key, v)
		case uint32:
			kv[i] = gguf.Uint32KV(e.Key, v)
		case float32:
			kv[i] = gguf.KV{Key: e.Key, Value: gguf.Value{Type: gguf.TypeFloat32, V: v}}
		case float64:
			kv[i] = gguf.KV{Key: e.Key, Value: gguf.Value{Type: gguf.TypeFloat64, V: v}}
		case []uint32:
			kv[i] = gguf.ArrayKV(e.Key, gguf.TypeUint32, v)
		default:
			return nil, fmt.Errorf("key %s: a value of Go type %T has no GGUF type here", e.Key, e.Value)
		}
	}
	return kv, nil
}

// WithTokenizer places a tokenizer's GGUF keys (tok, the tokenizer.*
// keys of llama.cpp's vocabulary file or of a model's, in their order)
// among a model's keys (kv, from GGUF) as pytorch/gguf_write.py and
// llama.cpp's converter order them: after the hyper-parameters and
// general.* keys, before llorch's own. A key kv already holds (the
// config's BOS and EOS ids) keeps kv's value, at tok's position.
func WithTokenizer(kv, tok []gguf.KV) []gguf.KV {
	own := map[string]gguf.Value{}
	var head, tail, rest []gguf.KV
	for _, e := range kv {
		switch {
		case strings.HasPrefix(e.Key, "llorch."):
			tail = append(tail, e)
		case strings.HasPrefix(e.Key, "tokenizer."):
			own[e.Key] = e.Value
			rest = append(rest, e)
		default:
			head = append(head, e)
		}
	}
	out := head
	for _, e := range tok {
		if v, ok := own[e.Key]; ok {
			e.Value = v
			delete(own, e.Key)
		}
		out = append(out, e)
	}
	for _, e := range rest {
		if _, left := own[e.Key]; left {
			out = append(out, e)
		}
	}
	return append(out, tail...)
}
