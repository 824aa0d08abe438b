package loader

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/model"
)

// TestEveryArchitectureIsPlaced: each registered architecture's placement
// has its ways here (HF, GGUF, convert), GPT-2's whole and the Llama
// family's fused; one without is refused by name, never loaded another way.
func TestEveryArchitectureIsPlaced(t *testing.T) {
	for _, a := range model.Architectures {
		cfg := model.Config{ModelType: a.Name}
		pc, err := placingOf(cfg)
		require.NoError(t, err, a.Name)
		require.True(t, pc.hf != nil && pc.gguf != nil && pc.sources != nil, a.Name)
		want := model.PlaceFused
		if a.Name == model.ArchGPT2 {
			want = model.PlaceWhole
		}
		require.Equal(t, want, cfg.Placement(), a.Name)
	}
	saved := placings[model.PlaceFused]
	delete(placings, model.PlaceFused)
	defer func() { placings[model.PlaceFused] = saved }()
	_, err := placingOf(model.Config{ModelType: model.ArchMixtral})
	require.ErrorContains(t, err, "mixtral: no loader places its tensors")
}
