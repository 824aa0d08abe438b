package model

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/safetensors"
	"github.com/llorch/llorch-check/tensors"
)

// llamaFamily is one architecture of the Llama family (RMSNorm, RoPE,
// SwiGLU): what it changes in the family's config, tensors and GGUF
// layout. Qwen2, Qwen3 and Phi-3 are Llama with a switch each; an
// architecture that differs only so is one registration below.
type llamaFamily struct {
	name string
	// HF config class defaults for keys a hub config.json may omit, as
	// pytorch/llama_torch.py applies them.
	eps, theta float64
	positions  int
	headDim    int // 0: hidden_size/heads

	fixedHeadDim bool // head_dim must be hidden_size/heads (Qwen2, Phi-3)
	qkNorm       bool // per-head RMSNorm of q and k before RoPE (Qwen3)
	fusedQKV     bool // qkv_proj and gate_up_proj are single matrices (Phi-3)
	// llamaCppRope: llama.cpp's llama permutes q's and k's rows for its
	// interleaved rope and reads Llama 3's scaling from rope_freqs.weight;
	// its other architectures do neither.
	llamaCppRope bool
	// origContextKey: llama.cpp's phi3 wants rope.scaling.original_context_length.
	origContextKey bool
	// noGGUFAttnBias: llama.cpp's layout of the architecture has no
	// attention biases, so a config with them is not written (Qwen3).
	noGGUFAttnBias bool

	// biases sets which projections have biases from config.json's
	// attention_bias and mlp_bias; ggufBiases from a GGUF file's tensors.
	biases     func(c *Config, attn, mlp bool) error
	ggufBiases func(c *Config, has func(name string) bool)
	// window refuses a sliding window the config switches on: it is not
	// implemented.
	window func(r rawConfig, positions int) error
}

func init() {
	for _, a := range []struct {
		class string
		fam   *llamaFamily
	}{
		{"LlamaForCausalLM", &llamaFamily{name: ArchLlama, eps: 1e-6, theta: 10000, positions: 2048, llamaCppRope: true,
			biases:     func(c *Config, attn, mlp bool) error { c.QKVBias, c.OBias, c.MLPBias = attn, attn, mlp; return nil },
			ggufBiases: llamaGGUFBiases}},
		{"Qwen2ForCausalLM", &llamaFamily{name: ArchQwen2, eps: 1e-6, theta: 10000, positions: 32768, fixedHeadDim: true,
			biases:     qwen2Biases,
			ggufBiases: func(c *Config, _ func(string) bool) { c.QKVBias = true },
			window:     qwenWindow}},
		{"Qwen3ForCausalLM", &llamaFamily{name: ArchQwen3, eps: 1e-6, theta: 10000, positions: 32768, headDim: 128, qkNorm: true, noGGUFAttnBias: true,
			biases:     qwen3Biases,
			ggufBiases: func(c *Config, has func(string) bool) { c.QKVBias = has("blk.0.attn_q.bias"); c.OBias = c.QKVBias },
			window:     qwen3Window}},
		{"Phi3ForCausalLM", &llamaFamily{name: ArchPhi3, eps: 1e-5, theta: 10000, positions: 4096, fixedHeadDim: true, fusedQKV: true, origContextKey: true,
			biases:     phi3Biases,
			ggufBiases: func(*Config, func(string) bool) {},
			window:     phi3Window}},
	} {
		register(a.fam.name, a.class, a.fam)
	}
}

// Architecture names, as config.json's model_type and GGUF's
// general.architecture spell them.
const (
	ArchGPT2  = "gpt2"
	ArchLlama = "llama" // Llama 2/3, Mistral, TinyLlama, SmolLM
	ArchQwen2 = "qwen2" // Qwen2, Qwen2.5
	ArchQwen3 = "qwen3"
	ArchPhi3  = "phi3"
)

// llama is the config's Llama-family architecture; nil for GPT-2.
func (c Config) llama() *llamaFamily {
	l, _ := c.family().(*llamaFamily)
	return l
}

func (*llamaFamily) tensorFamily() string { return tensors.Llama }

func (l *llamaFamily) jsonConfig(r rawConfig, _ string) (Config, error) { return r.llamaConfig(l) }

func (l *llamaFamily) ggufConfig(f *gguf.File, _ string) (Config, error) {
	return ggufLlamaConfig(f, l)
}

func (*llamaFamily) loadHF(ctx context.Context, cfg Config, f *safetensors.File, release func([]byte), opt LoadOptions) (*Model, error) {
	return loadLlamaFrom(ctx, cfg, f, release, opt)
}

func (*llamaFamily) loadGGUF(ctx context.Context, f *gguf.File, cfg Config, release func([]byte), opt LoadOptions) (*Model, error) {
	return loadLlamaGGUF(ctx, f, cfg, release, opt)
}

func (*llamaFamily) ggufTensors(m *Model, typ gguf.GGMLType, ftype uint32) ([]gguf.KV, []gguf.TensorData, error) {
	return m.llamaGGUF(typ, ftype)
}

func (*llamaFamily) convertPlan(cfg Config, f *safetensors.File, typ gguf.GGMLType, ftype uint32) ([]gguf.KV, []streamTensor, string, error) {
	return llamaPlan(cfg, f, typ, ftype)
}

func (*llamaFamily) withTokenizer(kv, tok []gguf.KV) []gguf.KV { return WithTokenizer(kv, tok) }

func (*llamaFamily) matrixShapes(c Config) [4][2]int {
	C, I, HD := c.NEmbd, c.NInner, c.NHead*c.HeadDim()
	return [4][2]int{{C, c.qkvLayout().width}, {HD, C}, {C, 2 * I}, {I, C}}
}

func (*llamaFamily) positionRows(Config) int { return 0 }

func (*llamaFamily) passWidths(c Config) (ff, act, rot int) {
	return 2 * c.NInner, c.NInner, c.RotaryDim
}

func (*llamaFamily) block(ps *pass, l int) { ps.llamaBlock(l) }

func (*llamaFamily) finalNorm(m *Model) (func(dst, x []float32), string) {
	c := m.Config
	return func(dst, x []float32) { rmsNorm(dst, x, m.lnfW, c.NEmbd, c.RMSNormEps, false) }, tensors.Norm
}

func (*llamaFamily) appliesTo(f Fault, c Config) bool {
	switch f {
	case FaultErfGELU, FaultTransposedProj:
		return false
	case FaultGQARepeat:
		return c.KVHeads() < c.NHead && c.KVHeads() > 1
	}
	return true
}

// Biases as the HF config classes have them: Qwen2's modeling file has
// q/k/v biases and no o bias whatever attention_bias says; Phi-3 has no
// biases; Qwen3 no MLP bias; Llama what attention_bias and mlp_bias say.

func qwen2Biases(c *Config, _, _ bool) error { c.QKVBias = true; return nil }

func qwen3Biases(c *Config, attn, mlp bool) error {
	if mlp {
		return fmt.Errorf("field \"mlp_bias\": value true: Qwen3 has no MLP bias; not implemented")
	}
	c.QKVBias, c.OBias = attn, attn
	return nil
}

func phi3Biases(_ *Config, attn, mlp bool) error {
	if attn || mlp {
		return fmt.Errorf("field \"attention_bias\"/\"mlp_bias\": Phi-3 has no biases; true is not implemented")
	}
	return nil
}

// llamaGGUFBiases reads Llama's biases from the tensors a file has.
func llamaGGUFBiases(c *Config, has func(string) bool) {
	c.QKVBias, c.OBias, c.MLPBias = has("blk.0.attn_q.bias"), has("blk.0.attn_output.bias"), has("blk.0.ffn_down.bias")
}

// Sliding windows a config switches on are refused: not implemented.

func qwenWindow(r rawConfig, _ int) error {
	on, err := r.boolean("use_sliding_window", false)
	if err != nil {
		return err
	}
	if on {
		return fmt.Errorf("field \"use_sliding_window\": value true: sliding-window attention is not implemented")
	}
	return nil
}

// qwen3Window also reads layer_types, where Qwen3's config lists each
// layer's attention.
func qwen3Window(r rawConfig, positions int) error {
	if err := qwenWindow(r, positions); err != nil {
		return err
	}
	v, ok := r.present("layer_types")
	if !ok {
		return nil
	}
	var types []string
	if err := json.Unmarshal(v, &types); err != nil {
		return fmt.Errorf("field \"layer_types\": value %s is not a list of strings", v)
	}
	for i, t := range types {
		if t != "full_attention" {
			return fmt.Errorf("field \"layer_types\": layer %d is %q; only full_attention is implemented", i, t)
		}
	}
	return nil
}

// phi3Window accepts Phi-3's window only when it is as long as the
// context, which a sequence never exceeds (Forward's context check holds).
func phi3Window(r rawConfig, positions int) error {
	w, err := r.positiveInt("sliding_window", false, 0)
	if err != nil {
		return err
	}
	if w != 0 && w < positions {
		return fmt.Errorf("field \"sliding_window\": value %d is shorter than the context %d: sliding-window attention is not implemented", w, positions)
	}
	return nil
}
