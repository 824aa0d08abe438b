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
		{"other family", llama, "erf-gelu", FaultNone, -1, `"erf-gelu": the fault has no counterpart in a llama model (4 query heads, 2 KV heads)`},
		{"no grouped heads", Config{ModelType: "llama", NLayer: 2, NHead: 4}, "gqa-repeat", FaultNone, -1, "no counterpart in a llama model (4 query heads, 4 KV heads)"},
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
