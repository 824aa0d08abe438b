package model

import (
	"fmt"
	"slices"
	"strings"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/kernels"
	"github.com/llorch/llorch-check/weights"
)

// llamaGGUF is GGUF for the Llama family: pytorch/gguf_write.py's keys
// and tensors (llama.cpp's converter layout), in its order, from the
// parameter table. The keys are general.architecture, the {arch}.*
// hyper-parameters, general.file_type and general.quantization_version,
// the BOS and EOS ids (WithTokenizer puts a vocabulary's other keys
// around them), and llorch's: Llama 3's HF rope_scaling parameters and
// the EOS list of a config with several. Tensors: token_embd,
// output_norm, output (untied only), rope_freqs (Llama 3 scaling), then
// each layer's, llama's q and k permuted for llama.cpp's rope.
func (m *Model) llamaGGUF(typ gguf.GGMLType, ftype uint32) ([]gguf.KV, []gguf.TensorData, error) {
	c := m.Config
	if err := llamaWritable(c); err != nil {
		return nil, nil, err
	}
	if m.rope.invFreq != nil && !slices.Equal(m.rope.invFreq, newRope(c).invFreq) {
		// A foreign file's rope_freqs.weight, applied without HF's
		// parameters, which the factors cannot be recovered exactly from.
		return nil, nil, fmt.Errorf("the model's rotary frequencies came from a file's %s without HF's rope_scaling; writing them is not implemented", ggufRopeFreqs)
	}
	kv := llamaKeys(c, ftype)

	var tensors []gguf.TensorData
	add := func(name string, shape []int, t gguf.GGMLType, vals []float32) error {
		td, err := weights.Tensor(name, shape, t, vals)
		if err != nil {
			return err
		}
		tensors = append(tensors, td)
		return nil
	}
	w := llamaWriter{m: m}
	globals := llamaGlobals(c)
	params := llamaParams(c)
	for i, p := range params {
		if err := checkRopeHeads(p); err != nil {
			return nil, nil, err
		}
		switch p.part {
		case partRouter: // with the layer's experts, stacked
			ts, err := moeTensors(m, layerOf(p.hf), typ)
			if err != nil {
				return nil, nil, err
			}
			tensors = append(tensors, ts...)
			continue
		case partExpertGate, partExpertUp, partExpertDown:
			continue
		}
		t := gguf.GGMLTypeF32
		if len(p.shape) == 2 {
			t = weights.MatrixType(typ, p.shape[1])
		}
		if err := add(p.gguf, p.shape, t, w.values(p)); err != nil {
			return nil, nil, err
		}
		if i == len(globals)-1 && c.RopeScaling != nil {
			if err := add(ggufRopeFreqs, []int{c.RotaryDim / 2}, gguf.GGMLTypeF32, llama3RopeFactors(c)); err != nil {
				return nil, nil, err
			}
		}
		if i == len(globals)-1 && c.LongRope != nil {
			for _, t := range longRopeTensors(c.LongRope) {
				if err := add(t.name, t.shape, t.typ, t.vals); err != nil {
					return nil, nil, err
				}
			}
		}
	}
	return kv, tensors, nil
}

// llamaKeys are GGUF's keys for a Llama-family config (llamaGGUF's).
func llamaKeys(c Config, ftype uint32) []gguf.KV {
	a := c.llama().gguf()
	u32 := func(key string, v int) gguf.KV { return gguf.Uint32KV(llamaKey(a, key), uint32(v)) }
	f32 := func(key string, v float64) gguf.KV {
		return gguf.KV{Key: llamaKey(a, key), Value: gguf.Value{Type: gguf.TypeFloat32, V: float32(v)}}
	}
	kv := []gguf.KV{
		gguf.StringKV(keyArchitecture, a),
		u32("vocab_size", c.VocabSize),
		u32("context_length", c.NPositions),
		u32("embedding_length", c.NEmbd),
		u32("block_count", c.NLayer),
		u32("feed_forward_length", c.NInner),
		u32("rope.dimension_count", c.RotaryDim),
		u32("attention.head_count", c.NHead),
		u32("attention.head_count_kv", c.KVHeads()),
		f32("attention.layer_norm_rms_epsilon", c.RMSNormEps),
		f32("rope.freq_base", c.RopeTheta),
	}
	if D := c.HeadDim(); D != c.NEmbd/c.NHead {
		kv = append(kv, u32("attention.key_length", D), u32("attention.value_length", D))
	}
	if c.Gemma != nil {
		kv = append(kv, u32("attention.sliding_window", gemmaWindow(c)))
		kv = append(kv, gemmaKeys(c, a)...)
	} else if w := c.Window(0); w > 0 {
		kv = append(kv, u32("attention.sliding_window", w))
	}
	kv = append(kv, moeKeys(c, a)...)
	switch s := c.LongRope; {
	case s != nil:
		kv = append(kv, u32("rope.scaling.original_context_length", s.Original), f32("rope.scaling.attn_factor", s.AttentionFactor))
	case c.llama().origContextKey:
		// HF's original_max_position_embeddings, which only Phi-3's
		// longrope reads; without it, the context, as llama.cpp's
		// converter writes it.
		kv = append(kv, u32("rope.scaling.original_context_length", c.NPositions))
	}
	kv = append(kv,
		gguf.Uint32KV("general.file_type", ftype),
		gguf.Uint32KV("general.quantization_version", 2),
		gguf.Uint32KV(keyBOS, uint32(c.BOSTokenID)),
		gguf.Uint32KV(keyEOS, uint32(c.EOSTokenID)))
	if s := c.RopeScaling; s != nil {
		for _, e := range []struct {
			key string
			v   float64
		}{{keyRopeFactor, s.Factor}, {keyRopeLowFreq, s.LowFreqFactor}, {keyRopeHighFreq, s.HighFreqFactor}, {keyRopeOrigMaxPos, s.OriginalMaxPositions}} {
			kv = append(kv, gguf.KV{Key: e.key, Value: gguf.Value{Type: gguf.TypeFloat64, V: e.v}})
		}
	}
	if ids := c.EOSTokenIDs; len(ids) > 1 {
		u := make([]uint32, len(ids))
		for i, id := range ids {
			u[i] = uint32(id)
		}
		kv = append(kv, gguf.ArrayKV(keyEOSList, gguf.TypeUint32, u))
	}
	return kv
}

// llamaWritable refuses what llama.cpp's layout cannot say for a config,
// as pytorch/gguf_write.py does.
func llamaWritable(c Config) error {
	if c.Gemma != nil {
		return gemmaWritable(c)
	}
	switch {
	case c.RopeScaling != nil && !c.llama().llamaCppRope:
		return fmt.Errorf("rope_scaling llama3 is not written for %s (llama.cpp reads rope_freqs.weight for llama only)", c.ModelType)
	case c.llama().llamaCppRope && c.RotaryDim != c.HeadDim():
		return fmt.Errorf("llama with partial rotary (%d of %d channels) is not written: llama.cpp's q/k permutation spans whole heads", c.RotaryDim, c.HeadDim())
	case c.LongRope != nil && !c.llama().origContextKey:
		return fmt.Errorf("%s with rope_scaling longrope is not written (llama.cpp reads rope_factors_long/short for phi3)", c.ModelType)
	case !c.sameWindowEverywhere():
		return fmt.Errorf("%s with sliding windows on some layers only (%v) is not written: llama.cpp's layout has one window for every layer", c.ModelType, c.Windows)
	case c.llama().noGGUFAttnBias && c.QKVBias:
		return fmt.Errorf("qwen3 with attention_bias is not written (llama.cpp's qwen3 has no attention biases)")
	}
	return moeWritable(c)
}

// llamaWriter reads the model's parameters back in HF's layout.
type llamaWriter struct {
	m *Model
	// The last fused matrix read, [in,out] as held, so that q, k and v
	// read it once.
	fused     *kernels.Matrix
	fusedVals []float32
}

// values is parameter p's values as the GGUF file stores them: HF's
// [out,in] (or vector), llama's q and k rows permuted.
func (w *llamaWriter) values(p llamaParam) []float32 {
	m := w.m
	var vals []float32
	switch p.part {
	case partEmbed:
		vals = m.wte.Float32s()
	case partHead:
		vals = m.lmW.Float32s()
	case partNorm:
		vals = m.lnfW
	default:
		vals = w.layerValues(p, &m.h[layerOf(p.hf)])
	}
	if p.ropeHeads == 0 {
		return vals
	}
	rows := p.shape[0]
	return weights.PermuteRows(vals, rows, len(vals)/rows, func(r int) int { return weights.RopeRow(r, rows, p.ropeHeads) }, func(r int) int { return r })
}

func (w *llamaWriter) layerValues(p llamaParam, b *block) []float32 {
	rows := p.shape[0]
	switch p.part {
	case partAttnNorm:
		return b.ln1W
	case partFFNNorm:
		return b.ln2W
	case partPostAttnNorm:
		return b.postAttnW
	case partPostFFNNorm:
		return b.postFFNW
	case partQNorm:
		return b.qNormW
	case partKNorm:
		return b.kNormW
	case partOBias:
		return b.projB
	case partDownBias:
		return b.mlpB
	case partQKVBias:
		return b.attnB[p.row : p.row+rows]
	case partGateUpBias:
		return b.fcB[p.row : p.row+rows]
	case partO:
		return weights.Transpose(b.projW.Float32s(), p.shape[1], rows)
	case partDown:
		return weights.Transpose(b.mlpW.Float32s(), p.shape[1], rows)
	}
	// q, k, v (gate, up): rows row.. of the fused [out,in], which the
	// block holds [in,out].
	src := &b.attnW
	if p.part == partGateUp {
		src = &b.fcW
	}
	if w.fused != src {
		w.fused, w.fusedVals = src, src.Float32s()
	}
	cols, width := p.shape[1], w.m.Config.fusedRows(p.part)
	out := make([]float32, rows*cols)
	for r := range rows {
		for k := range cols {
			out[r*cols+k] = w.fusedVals[k*width+p.row+r]
		}
	}
	return out
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
