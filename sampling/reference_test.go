package sampling_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/references"
	"github.com/llorch/llorch-check/sampling"
)

// TestProcessMatchesReferences is checkpoint 11 on the committed set: every
// sampling configuration on every case's PyTorch logits, at atol 1e-6, and
// the set of removed tokens exactly (a boundary token on the wrong side of
// top-p would be a small absolute error but a wrong distribution).
func TestProcessMatchesReferences(t *testing.T) {
	set, err := references.Open(fixture.TinyReferences())
	require.NoError(t, err)
	require.NotEmpty(t, set.Manifest.Sampling)
	n := 0
	for _, c := range set.Manifest.Cases {
		li, ok := set.Find(c.ID, "last_logits", references.NoLayer)
		require.True(t, ok, c.ID)
		logits, err := set.Tensor(li)
		require.NoError(t, err)
		for _, cfg := range set.Manifest.Sampling {
			t.Run(c.ID+"/"+cfg.Name, func(t *testing.T) {
				ti, ok := set.Find(c.ID, references.SamplingPrefix+cfg.Name, references.NoLayer)
				require.True(t, ok)
				want, err := set.Tensor(ti)
				require.NoError(t, err)
				p := cfg.Params()
				require.NoError(t, p.Validate(len(logits)))
				got := sampling.Process(logits, c.Tokens, p)
				require.Len(t, got, len(want))
				worst, at := 0.0, -1
				for i := range got {
					require.Equal(t, want[i] == 0, got[i] == 0, "token %d kept/removed differently: got %g want %g", i, got[i], want[i])
					if d := math.Abs(float64(got[i]) - float64(want[i])); d > worst {
						worst, at = d, i
					}
				}
				// Holds because the reference normalises in float64 too: torch's
				// float32 softmax alone is ~1e-5 off for a flat 50257-way
				// distribution (dump_references.py, process_logits).
				require.LessOrEqual(t, worst, 1e-6, "worst at token %d", at)
			})
			n++
		}
	}
	require.Equal(t, len(set.Manifest.Sampling)*len(set.Manifest.Cases), n)
	require.GreaterOrEqual(t, n, 18, "6 configurations × 3 cases")
}

// TestGreedyMatchesReferences is checkpoint 10: Argmax of the reference
// logits, and Process with greedy settings puts all mass there.
func TestGreedyMatchesReferences(t *testing.T) {
	set, err := references.Open(fixture.TinyReferences())
	require.NoError(t, err)
	require.NotEmpty(t, set.Manifest.Greedy)
	for _, g := range set.Manifest.Greedy {
		li, ok := set.Find(g.Case, "last_logits", references.NoLayer)
		require.True(t, ok)
		logits, err := set.Tensor(li)
		require.NoError(t, err)
		require.Equal(t, g.Token, sampling.Argmax(logits), g.Case)
		probs := sampling.Process(logits, nil, sampling.Params{Temperature: 0})
		require.Equal(t, float32(1), probs[g.Token], g.Case)
	}
}
