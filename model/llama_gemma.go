package model

import (
	"fmt"
	"maps"
	"math"

	"github.com/llorch/llorch-check/kernels"
	"github.com/llorch/llorch-check/tensors"
)

// Gemma 1, 2 and 3 (text) are the Llama family with a switch: the
// llamaFamily's gemma field. What they change, as HF's modeling_gemma.py,
// modeling_gemma2.py and modeling_gemma3.py compute it in float32:
//
//   - RMSNorm multiplies by (1 + w), in float32, after normalising: the
//     model holds each norm weight as float32(1 + w), which is the same
//     product bit for bit, and is what llama.cpp's GGUF files store;
//   - Gemma 2 and 3: four norms a block: input, post-attention (before
//     the residual add), pre-feedforward, post-feedforward (before the
//     residual add); Gemma 1 has Llama's two (Gemma.sandwich);
//   - GeGLU: down(gelu_tanh(gate) · up);
//   - the embedding times √hidden_size, the constant rounded to float32;
//   - attention scaled by query_pre_attn_scalar^-½ (Gemma 1: head_dim^-½;
//     it has no soft-caps and no sliding window);
//   - Gemma 2: scores soft-capped, tanh(s/c)·c, after the scaling and
//     before the mask, and the logits soft-capped by final_logit_softcapping;
//   - Gemma 3: per-head q and k norms ((1 + w) form) before RoPE; sliding
//     layers rotate with rope_local_base_freq (default RoPE), global ones
//     with rope_theta and rope_scaling. HF's Gemma 3 attention never reads
//     attn_logit_softcapping (the config keeps it; the forward ignores
//     it), so neither does this one; final_logit_softcapping it applies.
//
// Layers slide on Gemma 2's alternating layers (layer_types, by default
// even layers) and on Gemma 3's all but every sliding_window_pattern-th.

// Gemma holds what a Gemma config adds; nil for every other architecture.
type Gemma struct {
	Version            int     // 1, 2 or 3
	QueryPreAttnScalar float64 // the attention scale is its inverse square root
	AttnSoftcap        float64 // Gemma 2's attn_logit_softcapping; 0: none
	FinalSoftcap       float64 // final_logit_softcapping; 0: none
	LocalTheta         float64 // Gemma 3: rope_local_base_freq of the sliding layers; 0: every layer rotates alike
	LinearFactor       float64 // rope_scaling "linear" of the global rope: inv_freq / factor; 0: none
}

// Architecture names of Gemma.
const (
	ArchGemma  = "gemma"
	ArchGemma2 = "gemma2"
	ArchGemma3 = "gemma3_text"
)

func init() {
	for _, a := range []struct {
		class string
		fam   *llamaFamily
	}{
		{"GemmaForCausalLM", &llamaFamily{name: ArchGemma, eps: 1e-6, theta: 10000, positions: 8192, headDim: 256, gemma: 1,
			biases: gemmaBiases, ggufBiases: func(*Config, func(string) bool) {}}},
		{"Gemma2ForCausalLM", &llamaFamily{name: ArchGemma2, eps: 1e-6, theta: 10000, positions: 8192, headDim: 256, gemma: 2,
			biases: gemmaBiases, ggufBiases: func(*Config, func(string) bool) {}, windows: gemmaWindows(2)}},
		{"Gemma3ForCausalLM", &llamaFamily{name: ArchGemma3, eps: 1e-6, theta: 1e6, positions: 131072, headDim: 256, gemma: 3, qkNorm: true, ggufArch: "gemma3",
			biases: gemmaBiases, ggufBiases: func(*Config, func(string) bool) {}, windows: gemmaWindows(3)}},
	} {
		register(a.fam.name, a.class, a.fam)
	}
}

// sandwich says the block has Gemma's norms after the attention and
// after the FFN (post_attention_norm, post_ffw_norm), its
// pre_feedforward_layernorm in the place of the others'
// post_attention_layernorm; false for Gemma 1 and the other architectures.
func (g *Gemma) sandwich() bool { return g != nil && g.Version > 1 }

// gemmaBiases refuses attention_bias (HF's Gemma would add biases to
// q, k, v and o); Gemma's MLP has none whatever mlp_bias says.
func gemmaBiases(_ *Config, attn, _ bool) error {
	if attn {
		return fmt.Errorf("field \"attention_bias\": value true: Gemma's attention biases are not implemented")
	}
	return nil
}

// gemmaWindows sets the sliding layers' window: layer_types when given,
// else Gemma 2's every other layer from layer 0, Gemma 3's all but every
// sliding_window_pattern-th (default 6).
func gemmaWindows(version int) func(r rawConfig, c *Config) error {
	return func(r rawConfig, c *Config) error {
		types, err := r.layerTypes(c.NLayer)
		if err != nil {
			return err
		}
		w, err := r.positiveInt("sliding_window", false, 4096)
		if err != nil {
			return err
		}
		pattern := 2
		if version == 3 {
			if pattern, err = r.positiveInt("sliding_window_pattern", false, 6); err != nil {
				return err
			}
		}
		c.Windows = make([]int, c.NLayer)
		for i := range c.Windows {
			if types == nil && (i+1)%pattern != 0 || types != nil && types[i] == "sliding_attention" {
				c.Windows[i] = w
			}
		}
		return nil
	}
}

// gemmaConfig reads a Gemma config.json: the Llama family's fields, read
// with the keys Gemma means otherwise set aside, then Gemma's own.
func (r rawConfig) gemmaConfig(def *llamaFamily) (Config, error) {
	base := maps.Clone(r)
	// hidden_act is read below (Gemma 1) or by no Gemma module
	// (hidden_activation is); rope_scaling is read below.
	delete(base, "hidden_act")
	delete(base, "rope_scaling")
	if _, ok := r.present("num_key_value_heads"); !ok {
		kv := "4" // Gemma2Config's and Gemma3TextConfig's default
		if def.gemma == 1 {
			kv = "16" // GemmaConfig's
		}
		base["num_key_value_heads"] = []byte(kv)
	}
	c, err := base.llamaConfig(def)
	if err != nil {
		return Config{}, err
	}
	g := &Gemma{Version: def.gemma}
	if act, err := r.str("hidden_activation", "gelu_pytorch_tanh"); err != nil {
		return Config{}, err
	} else if act != "gelu_pytorch_tanh" {
		return Config{}, fmt.Errorf("field \"hidden_activation\": value %q is not implemented (only \"gelu_pytorch_tanh\", GeGLU)", act)
	}
	if c.Tied, err = r.boolean("tie_word_embeddings", true); err != nil {
		return Config{}, err
	}
	if c.BOSTokenID, err = r.tokenID("bos_token_id", 2); err != nil {
		return Config{}, err
	}
	if c.EOSTokenIDs, err = r.tokenIDs("eos_token_id", 1); err != nil {
		return Config{}, err
	}
	c.EOSTokenID = c.EOSTokenIDs[0]
	if def.gemma == 1 {
		return r.gemma1Config(c, g)
	}
	if g.QueryPreAttnScalar, err = r.positiveFloat("query_pre_attn_scalar", 256); err != nil {
		return Config{}, err
	}
	if bi, err := r.boolean("use_bidirectional_attention", false); err != nil {
		return Config{}, err
	} else if bi {
		return Config{}, fmt.Errorf("field \"use_bidirectional_attention\": value true is not implemented (causal attention only)")
	}
	if _, ok := r.present("rope_parameters"); ok {
		return Config{}, fmt.Errorf("field \"rope_parameters\": not implemented (rope_theta, rope_local_base_freq and rope_scaling are)")
	}
	finalDef, attnDef := 30.0, 50.0 // Gemma2Config's
	if def.gemma == 3 {
		finalDef, attnDef = 0, 0
	}
	if g.FinalSoftcap, err = r.softcap("final_logit_softcapping", finalDef); err != nil {
		return Config{}, err
	}
	if attn, err := r.softcap("attn_logit_softcapping", attnDef); err != nil {
		return Config{}, err
	} else if def.gemma == 2 {
		g.AttnSoftcap = attn
	}
	if def.gemma == 3 {
		if g.LocalTheta, err = r.positiveFloat("rope_local_base_freq", 10000); err != nil {
			return Config{}, err
		}
	}
	if g.LinearFactor, err = r.gemmaRopeScaling(); err != nil {
		return Config{}, err
	}
	c.Gemma = g
	c.ActivationFunction = "gelu_pytorch_tanh"
	return c, nil
}

// gemma1Config reads what GemmaConfig adds to the fields Gemma shares.
// HF's GemmaMLP took its activation from hidden_activation (null:
// gelu_pytorch_tanh) and ignored hidden_act, then, in the versions of
// modular_gemma.py, from hidden_act (default gelu_pytorch_tanh),
// ignoring hidden_activation; a config is read only where both readings
// give GeGLU: Gemma 1's hub configs' legacy hidden_act "gelu" is the
// exact erf GELU to the newer ones, and refused. Gemma 1 reads no
// query_pre_attn_scalar (its scale is head_dim^-½), no soft-cap and no
// window.
func (r rawConfig) gemma1Config(c Config, g *Gemma) (Config, error) {
	if act, err := r.str("hidden_act", "gelu_pytorch_tanh"); err != nil {
		return Config{}, err
	} else if act != "gelu_pytorch_tanh" {
		return Config{}, fmt.Errorf("field \"hidden_act\": value %q is not implemented: HF's GemmaMLP computes it since "+
			"modular_gemma.py (before, it read hidden_activation instead); only \"gelu_pytorch_tanh\" (GeGLU), which both read alike", act)
	}
	if adarms, err := r.boolean("use_adarms", false); err != nil {
		return Config{}, err
	} else if adarms {
		return Config{}, fmt.Errorf("field \"use_adarms\": value true is not implemented (adaptive RMSNorm)")
	}
	if _, ok := r.present("rope_parameters"); ok {
		return Config{}, fmt.Errorf("field \"rope_parameters\": not implemented (rope_theta and rope_scaling are)")
	}
	var err error
	g.QueryPreAttnScalar = float64(c.HeadDim())
	if g.LinearFactor, err = r.gemmaRopeScaling(); err != nil {
		return Config{}, err
	}
	c.Gemma = g
	c.ActivationFunction = "gelu_pytorch_tanh"
	return c, nil
}

// softcap reads a soft-capping value: null for none (0), else positive.
func (r rawConfig) softcap(field string, def float64) (float64, error) {
	if _, ok := r[field]; ok {
		if _, set := r.present(field); !set {
			return 0, nil
		}
	}
	return r.positiveFloat(field, def)
}

// gemmaRopeScaling reads rope_scaling: none, "default", or "linear"
// (Gemma 3's 4B and larger), whose factor divides the global rope's
// frequencies; the local rope is never scaled.
func (r rawConfig) gemmaRopeScaling() (float64, error) {
	v, ok := r.present("rope_scaling")
	if !ok {
		return 0, nil
	}
	sub, kind, err := ropeKind(v)
	if err != nil {
		return 0, err
	}
	switch kind {
	case "default":
		return 0, nil
	case "linear":
		f, err := sub.positiveFloat("factor", 0)
		if err != nil || f == 0 {
			return 0, fmt.Errorf("field \"rope_scaling\": linear needs a positive factor")
		}
		return f, nil
	}
	return 0, fmt.Errorf("field \"rope_scaling\": type %q is not implemented for Gemma (only linear)", kind)
}

// localRope is Gemma 3's rope of the sliding layers: rope_local_base_freq,
// unscaled; the zero rope when every layer rotates alike.
func localRope(c Config) rope {
	if c.Gemma == nil || c.Gemma.LocalTheta == 0 {
		return rope{}
	}
	u := c
	u.RopeTheta, u.RopeScaling, u.LongRope, u.Gemma = c.Gemma.LocalTheta, nil, nil, nil
	return newRope(u)
}

// gemmaBlock is layer l: x += post_attention_norm(attn(input_norm(x)));
// x += post_feedforward_norm(down(gelu_tanh(gate)·up) of pre_feedforward_norm(x)).
// Gemma 1 has neither post norm: pre_feedforward_norm is its
// post_attention_layernorm.
func (ps *pass) gemmaBlock(l int) {
	b, f := &ps.m.h[l], ps.m.faultsAt(l)
	c := ps.m.Config
	C, R := c.NEmbd, ps.R
	cos, sin := ps.cos, ps.sin
	if ps.cosL != nil && c.Window(l) > 0 {
		cos, sin = ps.cosL, ps.sinL
	}
	job := attnJob{scale: float32(math.Pow(c.Gemma.QueryPreAttnScalar, -0.5)), mulScale: true, wrongGroup: f.gqaRepeat}
	if !f.noSoftcap {
		job.softcap = float32(c.Gemma.AttnSoftcap)
	}
	if f.attnScaleByD {
		job.scale, job.mulScale = float32(c.HeadDim()), false
	}
	ps.attnOut(l, b, f, cos, sin, job)
	sandwich := c.Gemma.sandwich()
	if sandwich {
		rmsNorm(ps.proj, ps.proj, f.gemmaNorm(b.postAttnW), C, f.rmsEps, f.rmsF16)
		ps.p.emit(tensors.PostAttnNorm, l, ps.proj, R, C)
	}
	if f.noResidual {
		copy(ps.x, ps.proj)
	} else {
		kernels.AddShared(ps.x, ps.proj)
	}
	rmsNorm(ps.h, ps.x, f.gemmaNorm(b.ln2W), C, f.rmsEps, f.rmsF16)
	ps.p.emit(tensors.FFNNorm, l, ps.h, R, C)
	ps.gated(l, b, f, geglu)
	if sandwich {
		rmsNorm(ps.proj, ps.proj, f.gemmaNorm(b.postFFNW), C, f.rmsEps, f.rmsF16)
		ps.p.emit(tensors.PostFFNNorm, l, ps.proj, R, C)
	}
	kernels.AddShared(ps.x, ps.proj)
	ps.p.emit(tensors.BlockOut, l, ps.x, R, C)
}

// geglu sets out[i] = gelu_tanh(gate[i])·up[i], each rounded to float32
// (kernels.GELU is gelu_new's formula, the same function as ATen's tanh
// GELU to within its float32 rounding).
func geglu(out, gate, up, _ []float32, _ []float64) {
	copy(out, gate)
	kernels.GELU(out)
	for i := range out {
		out[i] *= up[i]
	}
}

// gemmaNorm is a norm weight as the block uses it: as held (1 + w), or
// with 1 added again under FaultGemmaNormDouble (a GGUF loader that adds
// the 1 llama.cpp's converter already folded in).
func (f blockFaults) gemmaNorm(w []float32) []float32 {
	if !f.normDouble || w == nil {
		return w
	}
	d := make([]float32, len(w))
	for i, v := range w {
		d[i] = v + 1
	}
	return d
}

// softcap sets x to tanh(x/c)·c, each step rounded to float32 as HF's
// three tensor operations are.
func softcap(x []float32, c float32) {
	for i, v := range x {
		x[i] = float32(math.Tanh(float64(v/c))) * c
	}
}

// embedScale is Gemma's embedding multiplier, √hidden_size rounded to
// float32 (HF's torch.tensor(hidden_size**0.5) in the model's dtype).
func embedScale(c Config) float32 {
	return float32(math.Sqrt(float64(c.NEmbd)))
}
