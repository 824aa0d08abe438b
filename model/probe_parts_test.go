package model

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/tensors"
)

// Past ForwardOptions.ProbeValues a probed pass emits each layer's scores
// and probabilities a group of heads at a time, in order, the parts
// together the tensor a pass emits whole to the bit; every other tensor
// comes whole. The attention output does not change.
func TestProbeParts(t *testing.T) {
	m, err := Load(fixture.FamilyModel("tiny-llama-gemma2"))
	require.NoError(t, err)
	toks := make([]int, 40)
	for i := range toks {
		toks[i] = 100 + 37*i
	}
	type key struct {
		name  string
		layer int
	}
	capture := func(values int) (map[key][]float32, map[key]int, []float32) {
		got, parts := map[key][]float32{}, map[key]int{}
		logits, err := m.Forward(t.Context(), m.NewCache(), toks, ForwardOptions{ProbeValues: values, Probe: ProbeFunc(func(c Captured) {
			k := key{c.Name, c.Layer}
			require.Equal(t, len(got[k]), c.Off, "%v: parts in order", k)
			got[k] = append(got[k], c.Data...)
			parts[k]++
			if c.Last() {
				require.Len(t, got[k], elements(c.Shape), "%v", k)
			}
		})})
		require.NoError(t, err)
		return got, parts, logits
	}
	whole, wholeParts, logits := capture(0)
	H, n := m.Config.NHead, len(toks)*len(toks)
	for _, tc := range []struct{ values, heads int }{{1, 1}, {2*n + 5, 2}, {H * n, H}} {
		got, parts, gotLogits := capture(tc.values)
		require.Equal(t, logits, gotLogits)
		require.Equal(t, whole, got, "probe values %d", tc.values)
		for k, p := range parts {
			want := 1
			if k.name == tensors.Scores || k.name == tensors.Probs {
				want = (H + tc.heads - 1) / tc.heads
			}
			require.Equal(t, want, p, "%v with probe values %d", k, tc.values)
		}
	}
	for k, p := range wholeParts {
		require.Equal(t, 1, p, "%v by default", k)
	}
	require.Len(t, whole[key{tensors.Scores, 0}], H*n, "layer 0's scores were captured")
}
