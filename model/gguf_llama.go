package model

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/internal/pages"
	"github.com/llorch/llorch-check/kernels"
	"github.com/llorch/llorch-check/weights"
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
func ggufLlamaConfig(f *gguf.File, fam *llamaFamily) (Config, error) {
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
		if *s.dst, err = weights.Dim(f, s.key); err != nil {
			return Config{}, err
		}
	}
	if c.NLayer > len(f.Tensors) {
		return Config{}, fmt.Errorf("key %s: value %d is more blocks than the file's %d tensors can hold", k("block_count"), c.NLayer, len(f.Tensors))
	}
	if c.NKVHead, err = weights.OptDim(f, k("attention.head_count_kv"), c.NHead); err != nil {
		return Config{}, err
	}
	if c.NHead%c.NKVHead != 0 {
		return Config{}, fmt.Errorf("key %s: value %d does not divide %s %d", k("attention.head_count_kv"), c.NKVHead, k("attention.head_count"), c.NHead)
	}
	if err := ggufHeadDim(f, &c, k); err != nil {
		return Config{}, err
	}
	if c.RMSNormEps, err = weights.PositiveFloat(f, k("attention.layer_norm_rms_epsilon"), 0); err != nil {
		return Config{}, err
	}
	if c.RopeTheta, err = weights.PositiveFloat(f, k("rope.freq_base"), 10000); err != nil {
		return Config{}, err
	}
	if fam.gemma != 0 {
		if err := ggufGemma(f, &c, fam, k); err != nil {
			return Config{}, err
		}
	} else if err := ggufLlamaRope(f, &c, k); err != nil {
		return Config{}, err
	}
	if c.Windows != nil && fam.windows == nil {
		// A window in a file of an architecture without one is the
		// architecture llama.cpp's converter writes under this name
		// (Mistral's under llama: HF's Llama has no window).
		c.ModelType = windowedAs(arch)
	}
	if err := ggufMoE(f, &c, fam); err != nil {
		return Config{}, err
	}
	if err := ggufVocab(f, &c, 1, 2); err != nil {
		return Config{}, err
	}
	if v, err := weights.OptNonNegative(f, k("vocab_size")); err != nil {
		return Config{}, err
	} else if v >= 0 && v != int64(c.VocabSize) {
		return Config{}, fmt.Errorf("key %s: value %d, but token_embd.weight has %d rows", k("vocab_size"), v, c.VocabSize)
	}
	if c.EOSTokenIDs, err = ggufEOSList(f, c); err != nil {
		return Config{}, err
	}
	_, hasOutput := f.Tensor(ggufOutput)
	c.Tied = !hasOutput
	// Biases as the HF config classes have them (llamaFamily.biases).
	fam.ggufBiases(&c, func(name string) bool { _, ok := f.Tensor(name); return ok })
	c.QKNorm, c.FusedQKV = fam.qkNorm, fam.fusedQKV
	return c, nil
}

// ggufHeadDim sets the head width: attention.key_length when the file
// has it (Qwen3's head_dim), else embedding_length / head_count; and the
// rotary dimension, rope.dimension_count (the whole head by default).
func ggufHeadDim(f *gguf.File, c *Config, k func(string) string) error {
	derived := 0
	if c.NEmbd%c.NHead == 0 {
		derived = c.NEmbd / c.NHead
	}
	hd, err := weights.OptDim(f, k("attention.key_length"), derived)
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
	if vl, err := weights.OptDim(f, k("attention.value_length"), hd); err != nil {
		return err
	} else if vl != hd {
		return fmt.Errorf("key %s: value %d differs from the key length %d: not implemented", k("attention.value_length"), vl, hd)
	}
	if hd != derived {
		c.HeadSize = hd
	}
	if c.RotaryDim, err = weights.OptDim(f, k("rope.dimension_count"), hd); err != nil {
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
func ggufLlamaRope(f *gguf.File, c *Config, k func(string) string) error {
	if v, ok := f.Get(k("rope.scaling.type")); ok {
		if s, _ := v.V.(string); s != "none" {
			return fmt.Errorf("key %s: value %.80v: rope scaling other than Llama 3's (rope_freqs.weight) is not implemented", k("rope.scaling.type"), v.V)
		}
	}
	if err := ggufLongRope(f, c); err != nil {
		return err
	}
	// A window is every layer's, as llama.cpp's converter writes
	// Mistral's and Phi-3's sliding_window (Qwen2's per-layer windows are
	// not written: llamaWritable).
	if w, err := weights.OptNonNegative(f, k("attention.sliding_window")); err != nil {
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
	if _, ok := f.Get(keyRopeFactor); !ok {
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
		v, ok := f.Get(e.key)
		x, isF64 := v.V.(float64)
		switch {
		case !ok:
			return fmt.Errorf("%w: %s (%s is set)", gguf.ErrNoKey, e.key, keyRopeFactor)
		case !isF64:
			return fmt.Errorf("key %s: want float64, have %s %.80v", e.key, v.Type, v.V)
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
func ggufEOSList(f *gguf.File, c Config) ([]int, error) {
	if _, ok := f.Get(keyEOSList); !ok {
		return []int{c.EOSTokenID}, nil
	}
	ids, err := f.Ints(keyEOSList)
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
func llamaParams(c Config) []llamaParam {
	ps := llamaGlobals(c)
	for l := range c.NLayer {
		ps = append(ps, llamaLayer(c, l)...)
	}
	return ps
}

// checkRopeHeads refuses a permutation whose heads do not split in two.
func checkRopeHeads(p llamaParam) error {
	if p.ropeHeads > 0 && (p.shape[0]%p.ropeHeads != 0 || p.shape[0]/p.ropeHeads%2 != 0) {
		return fmt.Errorf("tensor %q: %d rows do not split into %d heads of pairs for llama's rope permutation", p.gguf, p.shape[0], p.ropeHeads)
	}
	return nil
}

// ggufPart is one tensor of a matrix being loaded, with its data.
type ggufPart struct {
	p llamaParam
	weights.Part
}

// llamaGGUFLoader loads a Llama-family file's tensors through the
// family's llamaLoader, which places them as the HF loader does.
type llamaGGUFLoader struct {
	ld      llamaLoader
	f       *gguf.File
	release func([]byte)
	// The parts of the fused matrices being gathered, and how many tensors
	// make each (q, k, v or qkv; gate, up or gate_up).
	pending map[part][]ggufPart
	parts   map[part]int
}

// loadLlamaGGUF loads the tensors of a file ggufLlamaConfig read. Each
// matrix stays in its file's type where the kernels hold it (float32,
// float16 for a Float16 model or an F16 file with AsStored, a
// quantised type as is); q|k|v and gate|up are fused as the HF loader
// fuses them, quantised ones into one quantised matrix when their parts
// share a type, and into float32 (exact, at four bytes a weight) when
// they do not, as llama.cpp's Q4_K_M stores attn_v as Q6_K beside Q4_K.
func loadLlamaGGUF(ctx context.Context, f *gguf.File, cfg Config, release func([]byte), opt LoadOptions) (*Model, error) {
	m := &Model{Config: cfg, h: make([]block, cfg.NLayer), faultLayer: -1, Format: FormatGGUF, Float16: opt.Float16, local: localRope(cfg)}
	params := llamaParams(cfg)
	known := map[string]bool{}
	for _, p := range params {
		if err := checkRopeHeads(p); err != nil {
			return nil, err
		}
		known[p.gguf] = true
		if p.part == partRouter {
			for _, s := range moeStacks(cfg, layerOf(p.hf)) {
				known[s.gguf] = true
			}
		}
	}
	if cfg.llama().llamaCppRope {
		known[ggufRopeFreqs] = true
	}
	if cfg.LongRope != nil {
		known[ggufRopeLong], known[ggufRopeShort] = true, true // read with the config (ggufLongRope)
	}
	for _, t := range f.Tensors {
		if !known[t.Name] {
			return nil, fmt.Errorf("unexpected tensor %q (not part of llama.cpp's %s layout for these hyper-parameters)", t.Name, cfg.ModelType)
		}
	}
	if opt.AsStored {
		var names []string
		for _, p := range params {
			if len(p.shape) == 2 {
				names = append(names, p.gguf)
			}
		}
		m.holdAsStored(ggufStoredAs(f, names))
	}
	gl := llamaGGUFLoader{ld: llamaLoader{m: m, dtypes: map[string]bool{}}, f: f, release: release,
		pending: map[part][]ggufPart{}, parts: map[part]int{}}
	for _, p := range llamaLayer(cfg, 0) {
		gl.parts[p.part]++
	}
	for _, p := range params {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("loading stopped: %w", err)
		}
		switch p.part {
		case partRouter:
			if err := gl.loadExperts(layerOf(p.hf)); err != nil {
				return nil, err
			}
			continue
		case partExpertGate, partExpertUp, partExpertDown:
			continue
		}
		t, ok := f.Tensor(p.gguf)
		if !ok {
			return nil, fmt.Errorf("missing tensor %q", p.gguf)
		}
		if err := gl.load(p, t); err != nil {
			return nil, err
		}
	}
	if err := gl.ld.finish(); err != nil {
		return nil, err
	}
	var err error
	if m.rope, err = gl.rope(); err != nil {
		return nil, err
	}
	m.WeightsDType = strings.Join(slices.Sorted(maps.Keys(gl.ld.dtypes)), "+")
	if m.SourceSHA256, err = weights.SHA256(f, KeySourceSHA256); err != nil {
		return nil, err
	}
	if err := m.slabHead(); err != nil {
		return nil, err
	}
	return m, nil
}

// load reads tensor t as parameter p.
func (gl *llamaGGUFLoader) load(p llamaParam, t gguf.TensorInfo) error {
	if err := weights.CheckTensor(t, weights.Dims(p.shape)); err != nil {
		return err
	}
	raw, err := gl.f.TensorData(t.Name)
	if err != nil {
		return err
	}
	gl.ld.dtypes[t.Type.String()] = true
	pt := ggufPart{p, weights.Part{Info: t, Raw: raw, Rows: p.shape[0], RopeHeads: p.ropeHeads}}
	m := gl.ld.m
	if len(p.shape) == 2 && !m.Float16 && !m.BFloat16 {
		if p.part == partQKV || p.part == partGateUp {
			return gl.fused(pt)
		}
		if _, quantised := gguf.GroupsOf(t.Type); quantised {
			return gl.quantised(pt)
		}
	}
	if len(p.shape) == 2 && m.heldAsStored(t.Type) {
		// Float16 (bfloat16) held as such: the file's bits, not widened
		// to float32 and rounded back (the same bits). place copies q/k/v
		// and gate/up into the fused matrix; the embedding and the head
		// it keeps, and o and down it transposes where they are, so
		// those are copied off the file's pages first.
		h, err := pt.Float16s()
		if err != nil {
			return err
		}
		if p.part != partQKV && p.part != partGateUp {
			h = pages.Clone(h)
		}
		if err := gl.ld.place(pt.p, nil, h); err != nil {
			return err
		}
		gl.done(pt)
		return nil
	}
	vals, err := pt.Float32s()
	if err != nil {
		return err
	}
	gl.done(pt)
	if len(p.shape) == 1 {
		return gl.ld.putVector(p, vals)
	}
	return gl.placeFloat(pt, vals)
}

// placeFloat places a float matrix, as float16 bits in a Float16 model.
func (gl *llamaGGUFLoader) placeFloat(pt ggufPart, vals []float32) error {
	if !gl.ld.m.Float16 {
		return gl.ld.place(pt.p, vals, nil)
	}
	h, err := kernels.ToFloat16(vals)
	if err != nil {
		return fmt.Errorf("tensor %q: %w", pt.Info.Name, err)
	}
	if pt.Info.Type != gguf.GGMLTypeF16 {
		gl.ld.m.roundedToF16 = true
	}
	return gl.ld.place(pt.p, nil, h)
}

// done releases a part's pages, read for the last time.
func (gl *llamaGGUFLoader) done(pt ggufPart) {
	if gl.release != nil {
		gl.release(pt.Raw)
	}
}

// quantised keeps a quantised embedding, head, o or down matrix
// quantised.
func (gl *llamaGGUFLoader) quantised(pt ggufPart) error {
	m, p := gl.ld.m, pt.p
	dst, transposed := &m.wte, true // [V,C] as stored: the kernels read its rows (Row, MatMulT)
	switch p.part {
	case partHead:
		dst = &m.lmW
	case partO:
		dst, transposed = &m.h[layerOf(p.hf)].projW, false
	case partDown:
		dst, transposed = &m.h[layerOf(p.hf)].mlpW, false
	}
	w, err := weights.Quantized([]weights.Part{pt.Part}, p.shape[1], transposed, gl.release)
	if err != nil {
		return err
	}
	*dst = w
	return nil
}

// fused gathers the parts of a layer's q|k|v (gate|up) matrix and places
// them once the last is read: one quantised matrix when all are of one
// quantised type; column blocks, each quantised in its own type, when
// their types differ (llama.cpp's Q4_K_M); float32 for float types.
func (gl *llamaGGUFLoader) fused(pt ggufPart) error {
	p := pt.p
	parts := append(gl.pending[p.part], pt)
	gl.pending[p.part] = parts
	if len(parts) < gl.parts[p.part] {
		return nil
	}
	delete(gl.pending, p.part)
	b := &gl.ld.m.h[layerOf(p.hf)]
	dst, blocks := &b.attnW, &b.attnParts
	if p.part == partGateUp {
		dst, blocks = &b.fcW, &b.fcParts
	}
	_, quantised := gguf.GroupsOf(parts[0].Info.Type)
	switch {
	case quantised && !slices.ContainsFunc(parts, func(q ggufPart) bool { return q.Info.Type != parts[0].Info.Type }):
		ps := make([]weights.Part, len(parts))
		for i, q := range parts {
			ps[i] = q.Part
		}
		w, err := weights.Quantized(ps, p.shape[1], false, gl.release)
		if err != nil {
			return err
		}
		*dst = w
		return nil
	case slices.ContainsFunc(parts, func(q ggufPart) bool { _, ok := gguf.GroupsOf(q.Info.Type); return ok }):
		for _, q := range parts {
			w, err := gl.columnBlock(q)
			if err != nil {
				return err
			}
			*blocks = append(*blocks, colBlock{w: w, n: q.p.shape[0]})
		}
		return nil
	}
	for _, q := range parts {
		vals, err := q.Float32s()
		if err != nil {
			return err
		}
		gl.done(q)
		if err := gl.ld.place(q.p, vals, nil); err != nil {
			return err
		}
	}
	return nil
}

// columnBlock is one part of a fused matrix held on its own, [in,out]:
// quantised in the file's type, or float32 (slabbed) for a float part.
func (gl *llamaGGUFLoader) columnBlock(q ggufPart) (kernels.Matrix, error) {
	if _, ok := gguf.GroupsOf(q.Info.Type); ok {
		return weights.Quantized([]weights.Part{q.Part}, q.p.shape[1], false, gl.release)
	}
	vals, err := q.Float32s()
	if err != nil {
		return kernels.Matrix{}, err
	}
	gl.done(q)
	rows, cols := q.p.shape[0], q.p.shape[1]
	return kernels.SlabbedRows(kernels.Float32(vals), rows, cols)
}

// rope is the model's rotary frequencies. A file with the
// llorch.rope_scaling.* keys (one convert wrote) gets HF's inv_freq
// recomputed bit for bit, and its rope_freqs.weight must be the factors
// those parameters give; a file with rope_freqs.weight alone (llama.cpp's
// converter) gets HF's unscaled inv_freq divided by each factor, as
// llama.cpp applies them: llama.cpp's arithmetic, not HF's float32
// _compute_llama3_parameters chain, whose smoothed band differs in the
// last bits.
func (gl *llamaGGUFLoader) rope() (rope, error) {
	c := gl.ld.m.Config
	t, ok := gl.f.Tensor(ggufRopeFreqs)
	if !ok {
		if c.RopeScaling != nil {
			return rope{}, fmt.Errorf("missing tensor %q (key %s is set)", ggufRopeFreqs, keyRopeFactor)
		}
		return newRope(c), nil
	}
	half := c.RotaryDim / 2
	if t.Type != gguf.GGMLTypeF32 || !slices.Equal(t.Dims, []uint64{uint64(half)}) {
		return rope{}, fmt.Errorf("tensor %q: %s %v, want F32 [%d]", t.Name, t.Type, t.Dims, half)
	}
	raw, err := gl.f.TensorData(t.Name)
	if err != nil {
		return rope{}, err
	}
	factors := make([]float32, half)
	if err := gguf.DecodeFloat32(t.Type, raw, factors); err != nil {
		return rope{}, fmt.Errorf("tensor %q: %w", t.Name, err)
	}
	gl.done(ggufPart{Part: weights.Part{Info: t, Raw: raw}})
	if c.RopeScaling != nil {
		want := llama3RopeFactors(c)
		for i := range want {
			if math.Float32bits(want[i]) != math.Float32bits(factors[i]) {
				return rope{}, fmt.Errorf("tensor %q: factor %d is %g, the llorch.rope_scaling.* keys give %g", t.Name, i, factors[i], want[i])
			}
		}
		return newRope(c), nil
	}
	r := newRope(c)
	for i, fac := range factors {
		if !(fac > 0) || math.IsInf(float64(fac), 0) {
			return rope{}, fmt.Errorf("tensor %q: factor %d is %g, not a positive finite number", t.Name, i, fac)
		}
		r.invFreq[i] /= fac
	}
	return r, nil
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
