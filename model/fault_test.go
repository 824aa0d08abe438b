package model

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestInjectFaultSpec: NAME and NAME@LAYER inject the fault where they
// say; an unknown name, a fault of the other family and a layer the model
// lacks are errors naming the spec, and change nothing.
func TestInjectFaultSpec(t *testing.T) {
	gpt2 := Config{NLayer: 2, NHead: 4}
	llama := Config{ModelType: "llama", NLayer: 2, NHead: 4, Llama: Llama{NKVHead: 2}}
	for _, c := range []struct {
		name  string
		cfg   Config
		spec  string
		fault Fault
		layer int
		err   string
	}{
		{"none", gpt2, "", FaultNone, -1, ""},
		{"every block", gpt2, "attn-scale", FaultAttnScale, -1, ""},
		{"one block", gpt2, "erf-gelu@1", FaultErfGELU, 1, ""},
		{"llama's", llama, "gqa-repeat@0", FaultGQARepeat, 0, ""},
		{"unknown", gpt2, "bogus@1", FaultNone, -1, `"bogus@1": unknown fault "bogus"`},
		{"other family", llama, "erf-gelu", FaultNone, -1, `"erf-gelu": the fault has no counterpart in this llama model: a fault of GPT-2's GELU and Conv1D`},
		{"no grouped heads", Config{ModelType: "llama", NLayer: 2, NHead: 4}, "gqa-repeat", FaultNone, -1, "no counterpart in this llama model: 4 query heads over 4 KV heads"},
		{"no experts", llama, "moe-no-renorm@1", FaultNone, -1, `"moe-no-renorm@1": the fault has no counterpart in this llama model: it has no experts`},
		{"past the last", gpt2, "attn-scale@2", FaultNone, -1, `"attn-scale@2": layer must be 0..1`},
		{"negative", gpt2, "attn-scale@-1", FaultNone, -1, "layer must be 0..1"},
		{"not a number", gpt2, "attn-scale@x", FaultNone, -1, "layer must be 0..1"},
	} {
		m := &Model{Config: c.cfg, faultLayer: -1}
		err := m.InjectFaultSpec(c.spec)
		if c.err != "" {
			require.ErrorContains(t, err, c.err, c.name)
		} else {
			require.NoError(t, err, c.name)
		}
		require.Equal(t, c.fault, m.fault, c.name)
		require.Equal(t, c.layer, m.faultLayer, c.name)
	}
}

// TestFaultMissingSaysWhy: a fault that cannot change a model's forward
// is refused with what the config lacks, by its field, not with an
// account of its heads that says nothing about a window or an expert;
// the same faults on configs that have what they need apply.
func TestFaultMissingSaysWhy(t *testing.T) {
	llama := Config{ModelType: ArchLlama, NLayer: 2, NHead: 4, Llama: Llama{NKVHead: 2}}
	with := func(edit func(*Config)) Config { c := llama; edit(&c); return c }
	windowed := with(func(c *Config) { c.Windows = []int{0, 8} })
	longrope := with(func(c *Config) { c.NPositions = 64; c.LongRope = &LongRope{Original: 32} })
	shortOnly := with(func(c *Config) { c.NPositions = 32; c.LongRope = &LongRope{Original: 32} })
	gemma3 := with(func(c *Config) { c.ModelType = ArchGemma3; c.Gemma = &Gemma{} })
	gemma2 := with(func(c *Config) { c.ModelType = ArchGemma2; c.Gemma = &Gemma{AttnSoftcap: 50} })
	moe := func(norm bool) Config {
		return with(func(c *Config) { c.ModelType = ArchQwen3MoE; c.MoE = &MoE{Experts: 4, TopK: 2, NormTopK: norm} })
	}
	for _, c := range []struct {
		fault Fault
		cfg   Config
		why   string // "": the fault applies
	}{
		{FaultWindowIgnored, llama, "no layer has a sliding window (sliding_window unset"},
		{FaultWindowOffByOne, windowed, ""},
		{FaultLongRopeWrongFactor, llama, "its RoPE is not longrope (rope_scaling)"},
		{FaultLongRopeWrongFactor, shortOnly, "max_position_embeddings 32) is within original_max_position_embeddings (32)"},
		{FaultLongRopeWrongFactor, longrope, ""},
		{FaultGemmaNormDouble, llama, "only Gemma's hold w for 1 + w"},
		{FaultGemmaNormDouble, gemma3, ""},
		{FaultNoSoftcap, gemma3, "attn_logit_softcapping and final_logit_softcapping unset"},
		{FaultNoSoftcap, gemma2, ""},
		{FaultMoENoRenorm, moe(false), "not renormalised (norm_topk_prob false)"},
		{FaultMoENoRenorm, moe(true), ""},
		{FaultMoESoftmaxAfterTopK, moe(true), "renormalised (norm_topk_prob, or Mixtral)"},
		{FaultMoESoftmaxAfterTopK, moe(false), ""},
		{FaultGQARepeat, with(func(c *Config) { c.NKVHead = 1 }), "4 query heads over 1 KV heads"},
		{FaultGQARepeat, llama, ""},
		{FaultSwiGLUSwap, Config{ModelType: ArchGPT2, NLayer: 2, NHead: 4}, "a fault of the Llama family's"},
		{FaultErfGELU, Config{ModelType: ArchGPT2, NLayer: 2, NHead: 4}, ""},
	} {
		name := c.fault.String() + " on " + c.cfg.ModelType
		m := &Model{Config: c.cfg, faultLayer: -1}
		err := m.InjectFaultSpec(c.fault.String())
		require.Equal(t, c.why == "", c.fault.AppliesTo(c.cfg), name)
		if c.why == "" {
			require.NoError(t, err, name)
			require.Equal(t, c.fault, m.fault, name)
			continue
		}
		require.ErrorContains(t, err, "no counterpart in this "+c.cfg.ModelType+" model: ", name)
		require.ErrorContains(t, err, c.why, name)
		require.Equal(t, FaultNone, m.fault, name)
	}
}

// TestParseFaultSpec: the fault a spec names, before any model is there
// to check its layer against.
func TestParseFaultSpec(t *testing.T) {
	for _, c := range []struct {
		spec  string
		fault Fault
		err   string
	}{
		{"", FaultNone, ""},
		{"attn-scale", FaultAttnScale, ""},
		{"swiglu-swap@3", FaultSwiGLUSwap, ""},
		{"erf-gelu@x", FaultErfGELU, ""},
		{"bogus@1", FaultNone, `"bogus@1": unknown fault "bogus"`},
		{"@1", FaultNone, `"@1": unknown fault ""`},
	} {
		f, err := ParseFaultSpec(c.spec)
		if c.err != "" {
			require.ErrorContains(t, err, c.err, c.spec)
		} else {
			require.NoError(t, err, c.spec)
		}
		require.Equal(t, c.fault, f, c.spec)
	}
}

// FaultNames lists every fault ParseFault takes, and only those.
func TestFaultNames(t *testing.T) {
	require.Equal(t, "erf-gelu, transposed-proj, no-causal-mask, attn-scale, layernorm-eps, no-residual, "+
		"rope-layout, rmsnorm-f16-upcast, gqa-repeat, swiglu-swap, window-off-by-one, window-ignored, longrope-wrong-factor, gemma-norm-double, no-softcap, "+
		"moe-no-renorm, moe-softmax-after-topk", FaultNames())
}
