package loader

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHFLayer(t *testing.T) {
	for name, want := range map[string]int{
		"h.3.attn.c_attn.weight": 3, "transformer.h.12.ln_1.bias": 12,
		"model.layers.31.mlp.down_proj.weight": 31, "layers.0.input_layernorm.weight": 0,
		"model.embed_tokens.weight": -1, "lm_head.weight": -1, "model.norm.weight": -1, "ln_f.weight": -1,
	} {
		l, ok := hfLayer(name)
		if want < 0 {
			require.False(t, ok, name)
			continue
		}
		require.True(t, ok, name)
		require.Equal(t, want, l, name)
	}
}
