package model

import (
	"fmt"
	"slices"

	"github.com/llorch/llorch-check/kernels"
)

// The Llama family in GGUF: pytorch/gguf_write.py's keys and tensors
// (llama.cpp's converter layout), in its order, from the parameter table.
// The keys are general.architecture, the {arch}.* hyper-parameters,
// general.file_type and general.quantization_version, the BOS and EOS ids
// (a vocabulary's other keys go around them), and llorch's: Llama 3's HF
// rope_scaling parameters and the EOS list of a config with several.
// Tensors: token_embd, output_norm, output (untied only), rope_freqs
// (Llama 3 scaling), then each layer's, llama's q and k permuted for
// llama.cpp's rope.

func (*llamaFamily) ggufKeys(c Config, ftype uint32) ([]KV, error) {
	if err := llamaWritable(c); err != nil {
		return nil, err
	}
	return llamaKeys(c, ftype), nil
}

func (*llamaFamily) ggufTensors(m *Model) ([]GGUFTensor, error) {
	c := m.Config
	if m.rope.invFreq != nil && !slices.Equal(m.rope.invFreq, newRope(c).invFreq) {
		// A foreign file's rope_freqs.weight, applied without HF's
		// parameters, which the factors cannot be recovered exactly from.
		return nil, fmt.Errorf("the model's rotary frequencies came from a file's %s without HF's rope_scaling; writing them is not implemented", ggufRopeFreqs)
	}
	w := llamaWriter{m: m}
	return llamaLayout(c, func(p Param) GGUFTensor {
		t := llamaTensor(p)
		t.Values = w.values(p)
		return t
	}, func(l int) []GGUFTensor { return moeTensors(m, l) })
}

func (*llamaFamily) convertTensors(c Config) ([]GGUFTensor, error) {
	return llamaLayout(c, func(p Param) GGUFTensor {
		t := llamaTensor(p)
		t.Source, t.PlusOne = []string{p.hf}, c.Gemma != nil && p.part.isNorm()
		return t
	}, func(l int) []GGUFTensor {
		var out []GGUFTensor
		for _, s := range c.ExpertStacks(l) {
			out = append(out, s.convertTensor())
		}
		return out
	})
}

func (*llamaFamily) tokenizerLast() bool { return false }

// llamaTensor is parameter p's GGUF tensor, without its values.
func llamaTensor(p Param) GGUFTensor {
	return GGUFTensor{Name: p.gguf, Shape: p.shape, Matrix: len(p.shape) == 2, RopeHeads: p.ropeHeads}
}

// llamaLayout lists the family's GGUF tensors in the converter's order:
// each parameter's (of), a sparse layer's router and stacked experts
// (stacks), and after the globals the tensors made from the config
// (rope_freqs, the longrope factors).
func llamaLayout(c Config, of func(Param) GGUFTensor, stacks func(l int) []GGUFTensor) ([]GGUFTensor, error) {
	globals := len(llamaGlobals(c))
	var out []GGUFTensor
	for i, p := range llamaParams(c) {
		if err := p.CheckRopeHeads(); err != nil {
			return nil, err
		}
		switch p.part {
		case partRouter: // with the layer's experts, stacked
			out = append(out, stacks(layerOf(p.hf))...)
			continue
		case partExpertGate, partExpertUp, partExpertDown:
			continue
		}
		out = append(out, of(p))
		if i == globals-1 && c.RopeScaling != nil {
			out = append(out, GGUFTensor{Name: ggufRopeFreqs, Shape: []int{c.RotaryDim / 2}, Values: llama3RopeFactors(c)})
		}
		if i == globals-1 && c.LongRope != nil {
			out = append(out, longRopeTensors(c.LongRope)...)
		}
	}
	return out, nil
}

// llamaKeys are GGUF's keys for a Llama-family config.
func llamaKeys(c Config, ftype uint32) []KV {
	a := c.llama().gguf()
	u32 := func(key string, v int) KV { return KV{llamaKey(a, key), uint32(v)} }
	f32 := func(key string, v float64) KV { return KV{llamaKey(a, key), float32(v)} }
	kv := []KV{
		{keyArchitecture, a},
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
		KV{"general.file_type", ftype},
		KV{"general.quantization_version", uint32(2)},
		KV{keyBOS, uint32(c.BOSTokenID)},
		KV{keyEOS, uint32(c.EOSTokenID)})
	if s := c.RopeScaling; s != nil {
		for _, e := range []struct {
			key string
			v   float64
		}{{keyRopeFactor, s.Factor}, {keyRopeLowFreq, s.LowFreqFactor}, {keyRopeHighFreq, s.HighFreqFactor}, {keyRopeOrigMaxPos, s.OriginalMaxPositions}} {
			kv = append(kv, KV{e.key, e.v})
		}
	}
	if ids := c.EOSTokenIDs; len(ids) > 1 {
		u := make([]uint32, len(ids))
		for i, id := range ids {
			u[i] = uint32(id)
		}
		kv = append(kv, KV{keyEOSList, u})
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

// values is parameter p's values as HF stores them: [out,in], or a
// vector (GGUF permutes llama's q and k rows: GGUFTensor.RopeHeads).
func (w *llamaWriter) values(p Param) []float32 {
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
	return vals
}

func (w *llamaWriter) layerValues(p Param, b *block) []float32 {
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
		return kernels.Transpose(b.projW.Float32s(), p.shape[1], rows)
	case partDown:
		return kernels.Transpose(b.mlpW.Float32s(), p.shape[1], rows)
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
