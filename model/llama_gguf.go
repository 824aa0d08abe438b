package model

import (
	"fmt"
	"math"
	"slices"
)

// The Llama family in GGUF: llama.cpp's converter layout for its llama,
// qwen2, qwen3 and phi3 architectures (pytorch/gguf_write.py writes the
// same). Tensors are named by the parameter table (llama_params.go); the
// hyper-parameters are under "{arch}.". llorch's own keys carry what
// llama.cpp's do not: HF's Llama 3 rope_scaling, from which the loader
// recomputes HF's inv_freq bit for bit (llama.cpp's converter stores only
// the per-pair factors of rope_freqs.weight), and every EOS id of a
// config that lists several.
const (
	keyRopeFactor     = "llorch.rope_scaling.factor"
	keyRopeLowFreq    = "llorch.rope_scaling.low_freq_factor"
	keyRopeHighFreq   = "llorch.rope_scaling.high_freq_factor"
	keyRopeOrigMaxPos = "llorch.rope_scaling.original_max_position_embeddings"
	keyEOSList        = "llorch.eos_token_ids"

	// ggufRopeFreqs is llama.cpp's per-pair divisor of the rotary
	// frequencies (Llama 3's scaling), [RotaryDim/2].
	ggufRopeFreqs = "rope_freqs.weight"
)

// llamaKey is llama.cpp's name of a hyper-parameter of arch.
func llamaKey(arch, key string) string { return arch + "." + key }

// ggufLlamaConfig reads a Llama-family GGUF file's hyper-parameters into
// the Config the HF loader would give for the config.json it came from.
// Settings the forward does not implement are errors naming the key.
func ggufLlamaConfig(md Metadata, fam *llamaFamily) (Config, error) {
	arch := fam.name
	c := Config{ModelType: arch, ActivationFunction: "silu"}
	k := func(key string) string { return llamaKey(fam.gguf(), key) }
	var err error
	for _, s := range []struct {
		key string
		dst *int
	}{
		{k("context_length"), &c.NPositions},
		{k("embedding_length"), &c.NEmbd},
		{k("feed_forward_length"), &c.NInner},
		{k("block_count"), &c.NLayer},
		{k("attention.head_count"), &c.NHead},
	} {
		if *s.dst, err = md.Dim(s.key); err != nil {
			return Config{}, err
		}
	}
	if c.NLayer > md.TensorCount() {
		return Config{}, fmt.Errorf("key %s: value %d is more blocks than the file's %d tensors can hold", k("block_count"), c.NLayer, md.TensorCount())
	}
	if c.NKVHead, err = md.OptDim(k("attention.head_count_kv"), c.NHead); err != nil {
		return Config{}, err
	}
	if c.NHead%c.NKVHead != 0 {
		return Config{}, fmt.Errorf("key %s: value %d does not divide %s %d", k("attention.head_count_kv"), c.NKVHead, k("attention.head_count"), c.NHead)
	}
	if err := ggufHeadDim(md, &c, k); err != nil {
		return Config{}, err
	}
	if c.RMSNormEps, err = md.PositiveFloat(k("attention.layer_norm_rms_epsilon"), 0); err != nil {
		return Config{}, err
	}
	if c.RopeTheta, err = md.PositiveFloat(k("rope.freq_base"), 10000); err != nil {
		return Config{}, err
	}
	if fam.gemma != 0 {
		if err := ggufGemma(md, &c, fam, k); err != nil {
			return Config{}, err
		}
	} else if err := ggufLlamaRope(md, &c, k); err != nil {
		return Config{}, err
	}
	if c.Windows != nil && fam.windows == nil {
		// A window in a file of an architecture without one is the
		// architecture llama.cpp's converter writes under this name
		// (Mistral's under llama: HF's Llama has no window).
		c.ModelType = windowedAs(arch)
	}
	if err := ggufMoE(md, &c, fam); err != nil {
		return Config{}, err
	}
	if err := ggufVocab(md, &c, 1, 2); err != nil {
		return Config{}, err
	}
	if v, err := md.OptNonNegative(k("vocab_size")); err != nil {
		return Config{}, err
	} else if v >= 0 && v != int64(c.VocabSize) {
		return Config{}, fmt.Errorf("key %s: value %d, but token_embd.weight has %d rows", k("vocab_size"), v, c.VocabSize)
	}
	if c.EOSTokenIDs, err = ggufEOSList(md, c); err != nil {
		return Config{}, err
	}
	_, hasOutput := md.Tensor(ggufOutput)
	c.Tied = !hasOutput
	// Biases as the HF config classes have them (llamaFamily.biases).
	fam.ggufBiases(&c, func(name string) bool { _, ok := md.Tensor(name); return ok })
	c.QKNorm, c.FusedQKV = fam.qkNorm, fam.fusedQKV
	return c, nil
}

// ggufHeadDim sets the head width: attention.key_length when the file
// has it (Qwen3's head_dim), else embedding_length / head_count; and the
// rotary dimension, rope.dimension_count (the whole head by default).
func ggufHeadDim(md Metadata, c *Config, k func(string) string) error {
	derived := 0
	if c.NEmbd%c.NHead == 0 {
		derived = c.NEmbd / c.NHead
	}
	hd, err := md.OptDim(k("attention.key_length"), derived)
	if err != nil {
		return err
	}
	switch {
	case hd == 0:
		return fmt.Errorf("key %s: value %d is not divisible by %s %d and %s is absent",
			k("embedding_length"), c.NEmbd, k("attention.head_count"), c.NHead, k("attention.key_length"))
	case c.llama().fixedHeadDim && hd != derived:
		return fmt.Errorf("key %s: value %d: %s derives the head width from the embedding length (%d); another value is not implemented", k("attention.key_length"), hd, c.ModelType, derived)
	}
	if vl, err := md.OptDim(k("attention.value_length"), hd); err != nil {
		return err
	} else if vl != hd {
		return fmt.Errorf("key %s: value %d differs from the key length %d: not implemented", k("attention.value_length"), vl, hd)
	}
	if hd != derived {
		c.HeadSize = hd
	}
	if c.RotaryDim, err = md.OptDim(k("rope.dimension_count"), hd); err != nil {
		return err
	}
	switch {
	case c.RotaryDim%2 != 0 || c.RotaryDim > hd:
		return fmt.Errorf("key %s: value %d is not an even number up to the head width %d", k("rope.dimension_count"), c.RotaryDim, hd)
	case c.llama().llamaCppRope && c.RotaryDim != hd:
		// llama.cpp's converter permutes whole heads for its interleaved
		// rope, which then rotates pairs HF's partial rotary does not.
		return fmt.Errorf("key %s: value %d: partial rotary (head width %d) with llama's permuted q/k is not implemented", k("rope.dimension_count"), c.RotaryDim, hd)
	}
	return nil
}

// ggufLlamaRope reads what the forward does not implement (llama.cpp's
// rope scaling types) as errors, the sliding window into c.Windows, and
// the llorch.rope_scaling.* keys into c.RopeScaling.
func ggufLlamaRope(md Metadata, c *Config, k func(string) string) error {
	if v, _, ok := md.Value(k("rope.scaling.type")); ok {
		if s, _ := v.(string); s != "none" {
			return fmt.Errorf("key %s: value %.80v: rope scaling other than Llama 3's (rope_freqs.weight) is not implemented", k("rope.scaling.type"), v)
		}
	}
	if err := ggufLongRope(md, c); err != nil {
		return err
	}
	// A window is every layer's, as llama.cpp's converter writes
	// Mistral's and Phi-3's sliding_window (Qwen2's per-layer windows are
	// not written: llamaWritable).
	if w, err := md.OptNonNegative(k("attention.sliding_window")); err != nil {
		return err
	} else if w > 0 {
		if w > maxDim {
			return fmt.Errorf("key %s: value %d is out of range [1, %d]", k("attention.sliding_window"), w, maxDim)
		}
		c.Windows = make([]int, c.NLayer)
		for i := range c.Windows {
			c.Windows[i] = int(w)
		}
	}
	if _, _, ok := md.Value(keyRopeFactor); !ok {
		return nil
	}
	if !c.llama().llamaCppRope {
		return fmt.Errorf("key %s: Llama 3 rope scaling is only written for llama, not %s", keyRopeFactor, c.ModelType)
	}
	s := &RopeScaling{}
	for _, e := range []struct {
		key string
		dst *float64
	}{
		{keyRopeFactor, &s.Factor},
		{keyRopeLowFreq, &s.LowFreqFactor},
		{keyRopeHighFreq, &s.HighFreqFactor},
		{keyRopeOrigMaxPos, &s.OriginalMaxPositions},
	} {
		v, typ, ok := md.Value(e.key)
		x, isF64 := v.(float64)
		switch {
		case !ok:
			return fmt.Errorf("%w (%s is set)", md.NoKey(e.key), keyRopeFactor)
		case !isF64:
			return fmt.Errorf("key %s: want float64, have %s %.80v", e.key, typ, v)
		case !(x > 0) || math.IsInf(x, 0):
			return fmt.Errorf("key %s: value %g must be a positive finite number", e.key, x)
		}
		*e.dst = x
	}
	if s.HighFreqFactor <= s.LowFreqFactor {
		return fmt.Errorf("key %s: value %g must exceed %s %g", keyRopeHighFreq, s.HighFreqFactor, keyRopeLowFreq, s.LowFreqFactor)
	}
	c.RopeScaling = s
	return nil
}

// ggufEOSList is every EOS id: llorch.eos_token_ids when the file has it
// (its first must be tokenizer.ggml.eos_token_id), else that one.
func ggufEOSList(md Metadata, c Config) ([]int, error) {
	if _, _, ok := md.Value(keyEOSList); !ok {
		return []int{c.EOSTokenID}, nil
	}
	ids, err := md.Ints(keyEOSList)
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 || ids[0] != int64(c.EOSTokenID) {
		return nil, fmt.Errorf("key %s: value %v does not start with %s %d", keyEOSList, ids, keyEOS, c.EOSTokenID)
	}
	out := make([]int, len(ids))
	for i, id := range ids {
		if id < 0 || id >= int64(c.VocabSize) {
			return nil, fmt.Errorf("key %s: id %d outside the vocabulary of %d", keyEOSList, id, c.VocabSize)
		}
		out[i] = int(id)
	}
	return out, nil
}

// llamaParams is the family's table for a config: the globals, then each
// layer's tensors.
func llamaParams(c Config) []Param {
	ps := llamaGlobals(c)
	for l := range c.NLayer {
		ps = append(ps, llamaLayer(c, l)...)
	}
	return ps
}

// ReadRope sets the model's rotary frequencies from a GGUF file's
// rope_freqs.weight and keys. A file with the llorch.rope_scaling.* keys
// (one convert wrote) gets HF's inv_freq recomputed bit for bit, and its
// rope_freqs.weight must be the factors those parameters give; a file
// with rope_freqs.weight alone (llama.cpp's converter) gets HF's unscaled
// inv_freq divided by each factor, as llama.cpp applies them: llama.cpp's
// arithmetic, not HF's float32 _compute_llama3_parameters chain, whose
// smoothed band differs in the last bits. It returns the name of the
// tensor it read, "" if none.
func (pl *Placer) ReadRope(md Metadata) (string, error) {
	c := pl.m.Config
	t, ok := md.Tensor(ggufRopeFreqs)
	if !ok {
		if c.RopeScaling != nil {
			return "", fmt.Errorf("missing tensor %q (key %s is set)", ggufRopeFreqs, keyRopeFactor)
		}
		pl.m.rope = newRope(c)
		return "", nil
	}
	half := c.RotaryDim / 2
	if t.Type != "F32" || !slices.Equal(t.Dims, []uint64{uint64(half)}) {
		return "", fmt.Errorf("tensor %q: %s %v, want F32 [%d]", t.Name, t.Type, t.Dims, half)
	}
	factors, err := md.Float32s(t.Name)
	if err != nil {
		return "", err
	}
	if c.RopeScaling != nil {
		want := llama3RopeFactors(c)
		for i := range want {
			if math.Float32bits(want[i]) != math.Float32bits(factors[i]) {
				return "", fmt.Errorf("tensor %q: factor %d is %g, the llorch.rope_scaling.* keys give %g", t.Name, i, factors[i], want[i])
			}
		}
		pl.m.rope = newRope(c)
		return t.Name, nil
	}
	r := newRope(c)
	for i, fac := range factors {
		if !(fac > 0) || math.IsInf(float64(fac), 0) {
			return "", fmt.Errorf("tensor %q: factor %d is %g, not a positive finite number", t.Name, i, fac)
		}
		r.invFreq[i] /= fac
	}
	pl.m.rope = r
	return t.Name, nil
}

// GGUFConfigTensors names the tensors a GGUF file of c may hold beyond
// its parameters, read with the configuration: llama.cpp's
// rope_freqs.weight (llama's Llama 3 scaling; ReadRope), Phi-3's longrope
// factors.
func (c Config) GGUFConfigTensors() []string {
	var names []string
	if l := c.llama(); l != nil && l.llamaCppRope {
		names = append(names, ggufRopeFreqs)
	}
	if c.LongRope != nil {
		names = append(names, ggufRopeLong, ggufRopeShort)
	}
	return names
}

// llama3RopeFactors is rope_freqs.weight for a config with Llama 3
// scaling, as llama.cpp's converter (and pytorch/gguf_write.py) computes
// it: HF's float32 inv_freq, the band's factor in float64, rounded to
// float32 once.
func llama3RopeFactors(c Config) []float32 {
	s := c.RopeScaling
	unscaled := c
	unscaled.RopeScaling = nil
	freqs := newRope(unscaled).invFreq
	loWavelen, hiWavelen := s.OriginalMaxPositions/s.LowFreqFactor, s.OriginalMaxPositions/s.HighFreqFactor
	out := make([]float32, len(freqs))
	for i, f := range freqs {
		wavelen := 2 * math.Pi / float64(f)
		switch {
		case wavelen < hiWavelen:
			out[i] = 1
		case wavelen > loWavelen:
			out[i] = float32(s.Factor)
		default:
			smooth := (s.OriginalMaxPositions/wavelen - s.LowFreqFactor) / (s.HighFreqFactor - s.LowFreqFactor)
			out[i] = float32(1 / ((1-smooth)/s.Factor + smooth))
		}
	}
	return out
}
