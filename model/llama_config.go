package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// Llama holds what a Llama-family config adds to GPT-2's fields. The
// defaults are the HF config classes' (LlamaConfig, Qwen2Config,
// Qwen3Config, Phi3Config) for keys a hub config.json may omit, as
// pytorch/llama_torch.py applies them.
type Llama struct {
	NKVHead    int     // num_key_value_heads; 0 means NHead
	HeadSize   int     // head_dim when set apart from hidden_size/heads (Qwen3); 0 derives it
	RMSNormEps float64 // rms_norm_eps
	RopeTheta  float64 // rope_theta
	RotaryDim  int     // head_dim × partial_rotary_factor (Phi-3); the rest of a head passes RoPE untouched
	// RopeScaling is Llama 3's frequency scaling; nil for none.
	RopeScaling *RopeScaling
	// LongRope is Phi-3's longrope scaling; nil for none.
	LongRope    *LongRope
	Tied        bool  // tie_word_embeddings: the LM head is embed_tokens
	QKVBias     bool  // q/k/v projections have biases (Qwen2, or attention_bias)
	OBias       bool  // o_proj has a bias (Llama's attention_bias)
	MLPBias     bool  // gate/up/down have biases (Llama's mlp_bias)
	QKNorm      bool  // per-head RMSNorm of q and k before RoPE (Qwen3)
	FusedQKV    bool  // qkv_proj and gate_up_proj are single matrices (Phi-3)
	EOSTokenIDs []int // every eos_token_id (Llama 3 lists several); EOSTokenID is the first
	// Windows is each layer's sliding window: a query sees itself and the
	// window−1 keys before it; 0 for a layer of full attention, nil when
	// no layer slides (Mistral's sliding_window, Phi-3's, Qwen2's
	// use_sliding_window).
	Windows []int
	// Gemma is Gemma 2's and Gemma 3's settings (gemma.go); nil elsewhere.
	Gemma *Gemma
	// MoE is the mixture of experts (Qwen3-MoE, Mixtral); nil for a dense
	// model.
	MoE *MoE
}

// Window is layer l's sliding window; 0 for full attention.
func (c Config) Window(l int) int {
	if l < len(c.Windows) {
		return c.Windows[l]
	}
	return 0
}

// sameWindowEverywhere says every layer has the same window, or none.
func (c Config) sameWindowEverywhere() bool {
	for _, w := range c.Windows {
		if w != c.Window(0) {
			return false
		}
	}
	return true
}

// RopeScaling is rope_scaling of rope_type "llama3".
type RopeScaling struct {
	Factor, LowFreqFactor, HighFreqFactor float64
	OriginalMaxPositions                  float64
}

// llamaConfig reads a Llama-family config.json. Every setting the forward
// does not implement is an error naming the field, never ignored.
func (r rawConfig) llamaConfig(def *llamaFamily) (Config, error) {
	c := Config{ModelType: def.name, ActivationFunction: "silu"}
	var err error
	for _, s := range []struct {
		field string
		dst   *int
		def   int
	}{
		{"vocab_size", &c.VocabSize, 0},
		{"hidden_size", &c.NEmbd, 0},
		{"intermediate_size", &c.NInner, 0},
		{"num_hidden_layers", &c.NLayer, 0},
		{"num_attention_heads", &c.NHead, 0},
		{"max_position_embeddings", &c.NPositions, def.positions},
	} {
		if *s.dst, err = r.positiveInt(s.field, s.def == 0, s.def); err != nil {
			return Config{}, err
		}
	}
	if c.NKVHead, err = r.positiveInt("num_key_value_heads", false, c.NHead); err != nil {
		return Config{}, err
	}
	if c.NHead%c.NKVHead != 0 {
		return Config{}, fmt.Errorf("field \"num_key_value_heads\": value %d does not divide num_attention_heads %d", c.NKVHead, c.NHead)
	}
	derived := 0
	if c.NEmbd%c.NHead == 0 {
		derived = c.NEmbd / c.NHead
	}
	hd, err := r.positiveInt("head_dim", false, def.headDim)
	if err != nil {
		return Config{}, err
	}
	switch {
	case hd == 0 && derived == 0:
		return Config{}, fmt.Errorf("field \"num_attention_heads\": value %d does not divide hidden_size %d and head_dim is not set", c.NHead, c.NEmbd)
	case hd == 0:
		hd = derived
	case def.fixedHeadDim && hd != derived:
		return Config{}, fmt.Errorf("field \"head_dim\": value %d: %s derives head_dim from hidden_size/num_attention_heads (%d); another value is not implemented", hd, def.name, derived)
	}
	if hd != derived {
		c.HeadSize = hd
	}
	if act, err := r.str("hidden_act", "silu"); err != nil {
		return Config{}, err
	} else if act != "silu" {
		return Config{}, fmt.Errorf("field \"hidden_act\": value %q is not implemented (only \"silu\", SwiGLU)", act)
	}
	if c.RMSNormEps, err = r.positiveFloat("rms_norm_eps", def.eps); err != nil {
		return Config{}, err
	}
	if c.RopeTheta, err = r.positiveFloat("rope_theta", def.theta); err != nil {
		return Config{}, err
	}
	prf, err := r.positiveFloat("partial_rotary_factor", 1)
	if err != nil {
		return Config{}, err
	}
	if prf > 1 {
		return Config{}, fmt.Errorf("field \"partial_rotary_factor\": value %g is not in (0, 1]", prf)
	}
	if c.RotaryDim = int(float64(hd) * prf); c.RotaryDim <= 0 || c.RotaryDim%2 != 0 {
		return Config{}, fmt.Errorf("field \"partial_rotary_factor\": value %g gives a rotary dimension %d, not a positive even number", prf, c.RotaryDim)
	}
	if c.Tied, err = r.boolean("tie_word_embeddings", false); err != nil {
		return Config{}, err
	}
	attn, err := r.boolean("attention_bias", false)
	if err != nil {
		return Config{}, err
	}
	mlp, err := r.boolean("mlp_bias", false)
	if err != nil {
		return Config{}, err
	}
	if err := def.biases(&c, attn, mlp); err != nil {
		return Config{}, err
	}
	if c.RopeScaling, c.LongRope, err = r.ropeScaling(&c); err != nil {
		return Config{}, err
	}
	if def.windows != nil {
		if err := def.windows(r, &c); err != nil {
			return Config{}, err
		}
	}
	if def.moe != nil {
		if err := def.moe.read(r, &c); err != nil {
			return Config{}, err
		}
	}
	if c.BOSTokenID, err = r.tokenID("bos_token_id", 1); err != nil {
		return Config{}, err
	}
	if c.EOSTokenIDs, err = r.tokenIDs("eos_token_id", 2); err != nil {
		return Config{}, err
	}
	c.EOSTokenID = c.EOSTokenIDs[0]
	c.QKNorm, c.FusedQKV = def.qkNorm, def.fusedQKV
	return c, nil
}

// ropeScaling reads rope_scaling: null, "default", Llama 3's, or
// longrope (longRope).
func (r rawConfig) ropeScaling(c *Config) (*RopeScaling, *LongRope, error) {
	v, ok := r.present("rope_scaling")
	if !ok {
		return nil, nil, nil
	}
	sub, kind, err := ropeKind(v)
	if err != nil {
		return nil, nil, err
	}
	switch kind {
	case "default":
		return nil, nil, nil
	case "longrope", "su":
		lr, err := r.longRope(sub, c)
		return nil, lr, err
	case "llama3":
	default:
		return nil, nil, fmt.Errorf("field \"rope_scaling\": type %q is not implemented (only llama3 and longrope)", kind)
	}
	s := &RopeScaling{}
	for _, f := range []struct {
		field string
		dst   *float64
	}{
		{"factor", &s.Factor},
		{"low_freq_factor", &s.LowFreqFactor},
		{"high_freq_factor", &s.HighFreqFactor},
		{"original_max_position_embeddings", &s.OriginalMaxPositions},
	} {
		if *f.dst, err = sub.positiveFloat(f.field, 0); err != nil || *f.dst == 0 {
			return nil, nil, fmt.Errorf("field \"rope_scaling\": llama3 needs a positive %s", f.field)
		}
	}
	if s.HighFreqFactor <= s.LowFreqFactor {
		return nil, nil, fmt.Errorf("field \"rope_scaling\": llama3 needs high_freq_factor > low_freq_factor, have %g and %g", s.HighFreqFactor, s.LowFreqFactor)
	}
	return s, nil, nil
}

func (r rawConfig) positiveFloat(field string, def float64) (float64, error) {
	v, ok := r.present(field)
	if !ok {
		return def, nil
	}
	x, err := strconv.ParseFloat(string(bytes.TrimSpace(v)), 64)
	if err != nil {
		return 0, fmt.Errorf("field %q: value %s is not a number", field, v)
	}
	if !(x > 0) || math.IsInf(x, 0) {
		return 0, fmt.Errorf("field %q: value %s must be a positive finite number", field, v)
	}
	return x, nil
}

func (r rawConfig) boolean(field string, def bool) (bool, error) {
	v, ok := r.present(field)
	if !ok {
		return def, nil
	}
	var b bool
	if err := json.Unmarshal(v, &b); err != nil {
		return false, fmt.Errorf("field %q: value %s is not a boolean", field, v)
	}
	return b, nil
}

// tokenIDs reads a token id or a list of them (Llama 3's eos_token_id).
func (r rawConfig) tokenIDs(field string, def int) ([]int, error) {
	v, ok := r.present(field)
	if !ok {
		return []int{def}, nil
	}
	if bytes.HasPrefix(bytes.TrimSpace(v), []byte("[")) {
		var raw []json.RawMessage
		if err := json.Unmarshal(v, &raw); err != nil || len(raw) == 0 {
			return nil, fmt.Errorf("field %q: value %s is not a token id or a non-empty list of them", field, v)
		}
		ids := make([]int, len(raw))
		for i, x := range raw {
			id, err := rawConfig{field: x}.tokenID(field, 0)
			if err != nil {
				return nil, err
			}
			ids[i] = id
		}
		return ids, nil
	}
	id, err := r.tokenID(field, def)
	return []int{id}, err
}

// EOSTokens lists every end-of-sequence id: Llama 3's configs list
// several (<|end_of_text|>, <|eot_id|>, …), GPT-2's has one.
func (c Config) EOSTokens() []int {
	if len(c.EOSTokenIDs) > 0 {
		return c.EOSTokenIDs
	}
	return []int{c.EOSTokenID}
}
