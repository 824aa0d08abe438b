package model

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/internal/fixture/shards"
	"github.com/llorch/llorch-check/safetensors"
)

// TestLoadLayers: a model loaded with LoadOptions.Layers = 1 is, bit for
// bit, the model whose checkpoint holds only its first block (config and
// tensors cut by hand), for GPT-2 and a Llama-family model, from one
// file and from shards.
func TestLoadLayers(t *testing.T) {
	for _, tc := range []struct{ name, layersField string }{
		{"tiny-gpt2", "n_layer"}, {"tiny-llama-qwen3", "num_hidden_layers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := fixture.FamilyModel(tc.name)
			cut := fixture.CopyDir(t, src)
			var first []shards.Tensor
			for _, x := range shards.Read(t, src) {
				if !strings.Contains(x.Name, "h.1.") && !strings.Contains(x.Name, "layers.1.") { // the second of two

					first = append(first, x)
				}
			}
			require.NoError(t, os.WriteFile(filepath.Join(cut, safetensors.SingleFile), shards.File(t, first), 0o644))
			fixture.EditJSON(t, filepath.Join(cut, "config.json"), func(m map[string]any) { m[tc.layersField] = 1 })
			want, err := Load(cut)
			require.NoError(t, err)
			tokens := []int{1, 450, 7483, 310}
			w := lastLogits(t, want, tokens)
			for _, dir := range []string{src, shards.Copy(t, src, 3, "")} {
				got, err := LoadWith(dir, LoadOptions{Layers: 1})
				require.NoError(t, err)
				require.Equal(t, 1, got.Config.NLayer)
				require.Equal(t, 1, got.Layers)
				g := lastLogits(t, got, tokens)
				for i := range w {
					if math.Float32bits(w[i]) != math.Float32bits(g[i]) {
						t.Fatalf("%s: logit %d: cut checkpoint %g, --layers 1 %g", dir, i, w[i], g[i])
					}
				}
			}
			_, err = LoadWith(src, LoadOptions{Layers: 3})
			require.ErrorContains(t, err, "--layers 3: want 1 to the model's 2 layers")
		})
	}
}
