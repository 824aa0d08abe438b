package model

import (
	"encoding/json"
	"fmt"
	"slices"

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
	// windows sets the config's per-layer sliding windows (Config.Windows)
	// as the HF config class derives them; nil: none (Llama's config has
	// no window, and HF's Llama ignores a sliding_window key).
	windows func(r rawConfig, c *Config) error
	// ggufArch is the architecture llama.cpp's converter writes, when not
	// name (Mistral's is llama's).
	ggufArch string
	// gemma is Gemma's version (llama_gemma.go), 0 for the others: its
	// config, its norms and its attention (gemmaBlock).
	gemma int
	// moe: a mixture of experts' config and tensor names (moe_config.go);
	// nil for a dense architecture.
	moe *moeLayout
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
			windows:    qwenWindows}},
		{"Qwen3ForCausalLM", &llamaFamily{name: ArchQwen3, eps: 1e-6, theta: 10000, positions: 32768, headDim: 128, qkNorm: true, noGGUFAttnBias: true,
			biases:     qwen3Biases,
			ggufBiases: func(c *Config, has func(string) bool) { c.QKVBias = has("blk.0.attn_q.bias"); c.OBias = c.QKVBias },
			windows:    qwenWindows}},
		{"MistralForCausalLM", &llamaFamily{name: ArchMistral, eps: 1e-6, theta: 10000, positions: 4096 * 32, llamaCppRope: true, ggufArch: ArchLlama,
			biases:     func(*Config, bool, bool) error { return nil },
			ggufBiases: func(*Config, func(string) bool) {},
			windows:    everyLayerWindow(4096)}},
		{"Phi3ForCausalLM", &llamaFamily{name: ArchPhi3, eps: 1e-5, theta: 10000, positions: 4096, fixedHeadDim: true, fusedQKV: true, origContextKey: true,
			biases:     phi3Biases,
			ggufBiases: func(*Config, func(string) bool) {},
			windows:    everyLayerWindow(0)}},
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
	// Mistral: Llama with a sliding window (MistralConfig's default 4096;
	// null in v0.2 on). llama.cpp converts it as llama.
	ArchMistral = "mistral"
)

// windowedAs is the registered architecture with sliding windows that
// llama.cpp's converter writes as arch; arch itself when there is none.
func windowedAs(arch string) string {
	for _, a := range Architectures {
		if l, ok := a.fam.(*llamaFamily); ok && l.windows != nil && l.gguf() == arch && l.name != arch {
			return l.name
		}
	}
	return arch
}

// llama is the config's Llama-family architecture; nil for GPT-2.
func (c Config) llama() *llamaFamily {
	l, _ := c.family().(*llamaFamily)
	return l
}

// gguf is the architecture llama.cpp's layout calls it.
func (l *llamaFamily) gguf() string {
	if l.ggufArch != "" {
		return l.ggufArch
	}
	return l.name
}

func (*llamaFamily) tensorFamily() string { return tensors.Llama }

func (*llamaFamily) placement() Placement { return PlaceFused }

func (*llamaFamily) tokenizerJSON() bool { return true }

func (l *llamaFamily) jsonConfig(r rawConfig, _ string) (Config, error) {
	if l.gemma != 0 {
		return r.gemmaConfig(l)
	}
	return r.llamaConfig(l)
}

func (l *llamaFamily) ggufConfig(md Metadata, _ string) (Config, error) {
	return ggufLlamaConfig(md, l)
}

func (*llamaFamily) params(m *Model) []Param { return llamaParams(m.Config) }

func (*llamaFamily) matrixShapes(c Config) [4][2]int {
	C, I, HD := c.NEmbd, c.NInner, c.NHead*c.HeadDim()
	return [4][2]int{{C, c.qkvLayout().width}, {HD, C}, {C, 2 * I}, {I, C}}
}

func (*llamaFamily) positionRows(Config) int { return 0 }

func (*llamaFamily) passWidths(c Config) (ff, act, rot int) {
	return 2 * c.NInner, c.NInner, c.RotaryDim
}

func (f *llamaFamily) block(ps *pass, l int) {
	if f.gemma != 0 {
		ps.gemmaBlock(l)
		return
	}
	ps.llamaBlock(l)
}

func (*llamaFamily) finalNorm(m *Model) (func(dst, x []float32), string) {
	c := m.Config
	return func(dst, x []float32) { rmsNorm(dst, x, m.lnfW, c.NEmbd, c.RMSNormEps, false) }, tensors.Norm
}

func (*llamaFamily) faultMissing(f Fault, c Config) string {
	switch f {
	case FaultGemmaNormDouble:
		if c.Gemma == nil {
			return "its RMSNorm weights multiply as they are; only Gemma's hold w for 1 + w"
		}
	case FaultNoSoftcap:
		if c.Gemma == nil || c.Gemma.AttnSoftcap <= 0 && c.Gemma.FinalSoftcap <= 0 {
			return "it soft-caps nothing (attn_logit_softcapping and final_logit_softcapping unset, as Gemma 2 alone sets them)"
		}
	case FaultErfGELU, FaultTransposedProj:
		return "a fault of GPT-2's GELU and Conv1D, which the Llama family does not have"
	case FaultGQARepeat:
		if kv := c.KVHeads(); kv >= c.NHead || kv <= 1 {
			return fmt.Sprintf("%d query heads over %d KV heads: either repeat order reads the same KV head", c.NHead, kv)
		}
	case FaultWindowOffByOne, FaultWindowIgnored:
		if !slices.ContainsFunc(c.Windows, func(w int) bool { return w > 0 }) {
			return "no layer has a sliding window (sliding_window unset, or Qwen2's use_sliding_window false)"
		}
	case FaultLongRopeWrongFactor:
		if c.LongRope == nil {
			return "its RoPE is not longrope (rope_scaling)"
		}
		if c.NPositions <= c.LongRope.Original {
			return fmt.Sprintf("its context (max_position_embeddings %d) is within original_max_position_embeddings (%d): the short factors serve every length either way",
				c.NPositions, c.LongRope.Original)
		}
	case FaultMoENoRenorm, FaultMoESoftmaxAfterTopK:
		return moeFaultMissing(f, c)
	}
	return ""
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

// Sliding windows, as the HF config classes derive them. HF's mask lets
// query i see key j when i − window < j ≤ i (masking_utils'
// sliding_window_overlay), llama.cpp's the same (is_masked_swa, standard).

// everyLayerWindow is Mistral's and Phi-3's: sliding_window, when set,
// for every layer; def is the config class's default.
func everyLayerWindow(def int) func(r rawConfig, c *Config) error {
	return func(r rawConfig, c *Config) error {
		w, err := r.slidingWindow(def)
		if err != nil || w == 0 {
			return err
		}
		c.Windows = make([]int, c.NLayer)
		for i := range c.Windows {
			c.Windows[i] = w
		}
		return nil
	}
}

// qwenWindows is Qwen2's and Qwen3's: with use_sliding_window, the
// layers layer_types calls sliding_attention, by default those from
// max_window_layers on, slide over sliding_window keys.
func qwenWindows(r rawConfig, c *Config) error {
	types, err := r.layerTypes(c.NLayer)
	if err != nil {
		return err
	}
	on, err := r.boolean("use_sliding_window", false)
	if err != nil || !on {
		return err
	}
	w, err := r.slidingWindow(4096)
	if err != nil || w == 0 {
		return err
	}
	from, err := r.nonNegativeInt("max_window_layers", 28)
	if err != nil {
		return err
	}
	c.Windows = make([]int, c.NLayer)
	for i := range c.Windows {
		if types == nil && i >= from || types != nil && types[i] == "sliding_attention" {
			c.Windows[i] = w
		}
	}
	return nil
}

// layerTypes reads layer_types: one of full_attention or
// sliding_attention a layer; nil when absent.
func (r rawConfig) layerTypes(layers int) ([]string, error) {
	v, ok := r.present("layer_types")
	if !ok {
		return nil, nil
	}
	var types []string
	if err := json.Unmarshal(v, &types); err != nil {
		return nil, fmt.Errorf("field \"layer_types\": value %.80s is not a list of strings", v)
	}
	if len(types) != layers {
		return nil, fmt.Errorf("field \"layer_types\": %d entries for %d layers", len(types), layers)
	}
	for i, t := range types {
		if t != "full_attention" && t != "sliding_attention" {
			return nil, fmt.Errorf("field \"layer_types\": layer %d is %q; only full_attention and sliding_attention are implemented", i, t)
		}
	}
	return types, nil
}
