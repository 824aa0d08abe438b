package model

import (
	"fmt"

	"github.com/llorch/llorch-check/kernels"
	"github.com/llorch/llorch-check/tensors"
)

// GPT-2, the family: its registration, its config.json and GGUF
// configuration, its parameter table and GGUF layout, and its block as
// HF's GPT2Block computes it (docs/spec.md).

// gpt2Family is GPT-2 (gpt2): LayerNorm, learned positions, GELU, Conv1D
// matrices.
type gpt2Family struct{}

func init() { register(ArchGPT2, "GPT2LMHeadModel", gpt2Family{}) }

func (gpt2Family) tensorFamily() string { return tensors.GPT2 }

func (gpt2Family) placement() Placement { return PlaceWhole }

func (gpt2Family) tokenizerJSON() bool { return false }

func (gpt2Family) jsonConfig(r rawConfig, _ string) (Config, error) { return r.gpt2Config() }

func (gpt2Family) ggufConfig(md Metadata, _ string) (Config, error) { return gpt2GGUFConfig(md) }

func (gpt2Family) params(m *Model) []Param { return m.gpt2Params() }

func (gpt2Family) matrixShapes(c Config) [4][2]int {
	C, I := c.NEmbd, c.NInner
	return [4][2]int{{C, 3 * C}, {C, C}, {C, I}, {I, C}}
}

func (gpt2Family) positionRows(c Config) int { return c.NPositions }

func (gpt2Family) passWidths(c Config) (ff, act, rot int) { return c.NInner, 0, 0 }

func (gpt2Family) block(ps *pass, l int) { ps.block(l) }

func (gpt2Family) finalNorm(m *Model) (func(dst, x []float32), string) {
	c := m.Config
	return func(dst, x []float32) { layerNorm(dst, x, m.lnfW, m.lnfB, c.NEmbd, c.LayerNormEpsilon) }, tensors.LNF
}

func (gpt2Family) faultMissing(f Fault, _ Config) string {
	switch f {
	case FaultRopeLayout, FaultRMSNormF16, FaultSwiGLUSwap, FaultGQARepeat, FaultWindowOffByOne, FaultWindowIgnored, FaultLongRopeWrongFactor,
		FaultGemmaNormDouble, FaultNoSoftcap, FaultMoENoRenorm, FaultMoESoftmaxAfterTopK:
		return "a fault of the Llama family's, and GPT-2 has none of RoPE, RMSNorm, SwiGLU, grouped KV heads, sliding windows, Gemma's norms and soft-caps or experts"
	}
	return ""
}

// gpt2Config reads GPT2Config's fields; every flag that would change the
// attention math from GPT-2's is an error naming it.
func (raw rawConfig) gpt2Config() (Config, error) {
	c := Config{ModelType: ArchGPT2}
	var err error
	sizes := []struct {
		field string
		dst   *int
	}{
		{"vocab_size", &c.VocabSize},
		{"n_positions", &c.NPositions},
		{"n_embd", &c.NEmbd},
		{"n_layer", &c.NLayer},
		{"n_head", &c.NHead},
	}
	for _, s := range sizes {
		if *s.dst, err = raw.positiveInt(s.field, true, 0); err != nil {
			return Config{}, err
		}
	}
	if c.NEmbd%c.NHead != 0 {
		return Config{}, fmt.Errorf("field \"n_embd\": value %d is not divisible by n_head %d", c.NEmbd, c.NHead)
	}
	if c.NInner, err = raw.positiveInt("n_inner", false, 4*c.NEmbd); err != nil {
		return Config{}, err
	}
	if c.LayerNormEpsilon, err = raw.epsilon(); err != nil {
		return Config{}, err
	}
	if c.ActivationFunction, err = raw.str("activation_function", "gelu_new"); err != nil {
		return Config{}, err
	}
	if c.ActivationFunction != "gelu_new" {
		return Config{}, fmt.Errorf("field \"activation_function\": value %q is not implemented (only \"gelu_new\")", c.ActivationFunction)
	}
	if c.BOSTokenID, err = raw.tokenID("bos_token_id", 50256); err != nil {
		return Config{}, err
	}
	if c.EOSTokenID, err = raw.tokenID("eos_token_id", 50256); err != nil {
		return Config{}, err
	}
	// Each flag below, set the other way, changes the attention math.
	flags := []struct {
		field string
		want  bool
	}{
		{"scale_attn_weights", true},
		{"scale_attn_by_inverse_layer_idx", false},
		{"reorder_and_upcast_attn", false},
		{"add_cross_attention", false},
		{"tie_word_embeddings", true},
	}
	for _, f := range flags {
		if err := raw.requireBool(f.field, f.want); err != nil {
			return Config{}, err
		}
	}
	return c, nil
}

// GGUF metadata keys of llama.cpp's "gpt2" architecture.
const (
	ggufArch          = "gpt2"
	keyContextLength  = "gpt2.context_length"
	keyEmbeddingLen   = "gpt2.embedding_length"
	keyFeedForwardLen = "gpt2.feed_forward_length"
	keyBlockCount     = "gpt2.block_count"
	keyHeadCount      = "gpt2.attention.head_count"
	keyLayerNormEps   = "gpt2.attention.layer_norm_epsilon"
)

// gpt2GGUFConfig reads llama.cpp's gpt2.* hyper-parameters.
func gpt2GGUFConfig(md Metadata) (Config, error) {
	c := Config{ModelType: ArchGPT2, ActivationFunction: "gelu_new"}
	var err error
	for _, s := range []struct {
		key string
		dst *int
	}{
		{keyContextLength, &c.NPositions},
		{keyEmbeddingLen, &c.NEmbd},
		{keyFeedForwardLen, &c.NInner},
		{keyBlockCount, &c.NLayer},
		{keyHeadCount, &c.NHead},
	} {
		if *s.dst, err = md.Dim(s.key); err != nil {
			return Config{}, err
		}
	}
	if c.NEmbd%c.NHead != 0 {
		return Config{}, fmt.Errorf("key %s: value %d is not divisible by %s %d", keyEmbeddingLen, c.NEmbd, keyHeadCount, c.NHead)
	}
	// Checked before anything is sized by it, so a crafted block count
	// cannot allocate more blocks than the file has tensors; a count that
	// is merely too high fails later, naming the first missing tensor.
	if c.NLayer > md.TensorCount() {
		return Config{}, fmt.Errorf("key %s: value %d is more blocks than the file's %d tensors can hold", keyBlockCount, c.NLayer, md.TensorCount())
	}
	if c.LayerNormEpsilon, err = md.PositiveFloat(keyLayerNormEps, 0); err != nil {
		return Config{}, err
	}
	if err := ggufVocab(md, &c, 50256, 50256); err != nil {
		return Config{}, err
	}
	return c, nil
}

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

// GPT-2's parameter table. Its names are HF's without "transformer.";
// its shapes the model's, Conv1D matrices [in,out]. llama.cpp's converter
// transposes the Conv1D matrices to PyTorch Linear's [out,in] before
// writing (transposed), and GGUF lists dims fastest-varying first, so a
// transposed [in,out] matrix has GGUF dims [in,out] and an untransposed
// one (the embeddings) its shape reversed.

// gpt2Params lists every parameter of GPT-2 in llama.cpp's order (HF's
// too); m.Config and m.h must be set. position_embd is a matrix llama.cpp's
// converter never quantises; the LM head (lm_head.weight, output.weight)
// is tied to wte and so not a parameter of its own: each loader checks it.
func (m *Model) gpt2Params() []Param {
	c := m.Config
	C, I, V, P := c.NEmbd, c.NInner, c.VocabSize, c.NPositions
	ps := []Param{
		{hf: "wte.weight", gguf: "token_embd.weight", shape: []int{V, C}, dst: mat(&m.wte)},
		{hf: "wpe.weight", gguf: "position_embd.weight", shape: []int{P, C}, dst: vec(&m.wpe)},
	}
	for i := range m.h {
		b := &m.h[i]
		for _, p := range []Param{
			{hf: "ln_1.weight", gguf: "attn_norm.weight", shape: []int{C}, dst: vec(&b.ln1W)},
			{hf: "ln_1.bias", gguf: "attn_norm.bias", shape: []int{C}, dst: vec(&b.ln1B)},
			{hf: "attn.c_attn.weight", gguf: "attn_qkv.weight", shape: []int{C, 3 * C}, transposed: true, dst: mat(&b.attnW)},
			{hf: "attn.c_attn.bias", gguf: "attn_qkv.bias", shape: []int{3 * C}, dst: vec(&b.attnB)},
			{hf: "attn.c_proj.weight", gguf: "attn_output.weight", shape: []int{C, C}, transposed: true, dst: mat(&b.projW)},
			{hf: "attn.c_proj.bias", gguf: "attn_output.bias", shape: []int{C}, dst: vec(&b.projB)},
			{hf: "ln_2.weight", gguf: "ffn_norm.weight", shape: []int{C}, dst: vec(&b.ln2W)},
			{hf: "ln_2.bias", gguf: "ffn_norm.bias", shape: []int{C}, dst: vec(&b.ln2B)},
			{hf: "mlp.c_fc.weight", gguf: "ffn_up.weight", shape: []int{C, I}, transposed: true, dst: mat(&b.fcW)},
			{hf: "mlp.c_fc.bias", gguf: "ffn_up.bias", shape: []int{I}, dst: vec(&b.fcB)},
			{hf: "mlp.c_proj.weight", gguf: "ffn_down.weight", shape: []int{I, C}, transposed: true, dst: mat(&b.mlpW)},
			{hf: "mlp.c_proj.bias", gguf: "ffn_down.bias", shape: []int{C}, dst: vec(&b.mlpB)},
		} {
			p.hf, p.gguf = fmt.Sprintf("h.%d.%s", i, p.hf), fmt.Sprintf("blk.%d.%s", i, p.gguf)
			ps = append(ps, p)
		}
	}
	return append(ps,
		Param{hf: "ln_f.weight", gguf: "output_norm.weight", shape: []int{C}, dst: vec(&m.lnfW)},
		Param{hf: "ln_f.bias", gguf: "output_norm.bias", shape: []int{C}, dst: vec(&m.lnfB)},
	)
}

// block is transformer layer l: x += attn(ln_1(x)); x += mlp(ln_2(x)).
func (ps *pass) block(l int) {
	b, f := &ps.m.h[l], ps.m.faultsAt(l)
	ps.attention(l, b, f)
	ps.mlp(l, b, f)
	ps.p.emit(tensors.BlockOut, l, ps.x, ps.R, ps.m.Config.NEmbd)
}

// attention is x += c_proj(attn(c_attn(ln_1(x)))), writing each span's
// keys and values to its cache (past its length, so invisible until the
// pass commits).
func (ps *pass) attention(l int, b *block, f blockFaults) {
	c, R := ps.m.Config, ps.R
	C, H, D := c.NEmbd, c.NHead, c.HeadDim()
	layerNorm(ps.h, ps.x, b.ln1W, b.ln1B, C, f.eps)
	ps.p.emit(tensors.LN1, l, ps.h, R, C)
	conv1D(ps.qkv, ps.h, b.attnW, b.attnB, R, C, 3*C, false)
	if ps.p.on() {
		for i, name := range []string{tensors.Q, tensors.K, tensors.V} {
			splitHeads(ps.headBuf, ps.qkv, 3*C, i*C, R, H, D)
			ps.p.emit(name, l, ps.headBuf, H, R, D)
		}
	}
	ps.attend(l, f, attnJob{scale: f.attnScale(D)})
	conv1D(ps.proj, ps.att, b.projW, b.projB, R, C, C, f.transposedProj)
	ps.p.emit(tensors.AttnOut, l, ps.proj, R, C)
	if f.noResidual {
		copy(ps.x, ps.proj)
	} else {
		kernels.AddShared(ps.x, ps.proj)
	}
}

// mlp is x += c_proj(gelu(c_fc(ln_2(x)))).
func (ps *pass) mlp(l int, b *block, f blockFaults) {
	c, R := ps.m.Config, ps.R
	C, I := c.NEmbd, c.NInner
	layerNorm(ps.h, ps.x, b.ln2W, b.ln2B, C, f.eps)
	ps.p.emit(tensors.LN2, l, ps.h, R, C)
	conv1D(ps.fc, ps.h, b.fcW, b.fcB, R, C, I, false)
	if f.erfGELU {
		geluErf(ps.fc)
	} else {
		geluNew(ps.fc)
	}
	ps.p.emit(tensors.GELU, l, ps.fc, R, I)
	conv1D(ps.proj, ps.fc, b.mlpW, b.mlpB, R, I, C, false)
	ps.p.emit(tensors.MLPOut, l, ps.proj, R, C)
	kernels.AddShared(ps.x, ps.proj)
}
