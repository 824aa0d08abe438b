package checkpoints

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/generation"
	"github.com/llorch/llorch-check/grammar"
	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/references"
	"github.com/llorch/llorch-check/sampling"
	"github.com/llorch/llorch-check/tensors"
)

// TestSamplingMaskKeepsOdds is checkpoint 11 under a grammar's mask: on
// PyTorch's last-position logits of every case and every processor
// configuration of the default set, the tokens a mask removes get
// probability exactly 0 and the others keep their relative odds. Where
// the processors act token by token (temperature, penalties, bias) the
// masked distribution is PyTorch's renormalised over the allowed tokens;
// where they truncate (top-k, top-p, min-p) the truncation sees only the
// allowed tokens, so the check is the odds of the tokens both keep.
func TestSamplingMaskKeepsOdds(t *testing.T) {
	set, err := references.Open(fixture.TinyReferences())
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(11, 11))
	checked := 0
	for _, c := range set.Manifest.Cases {
		li, ok := set.Find(c.ID, tensors.LastLogits, model.NoLayer)
		if !ok {
			continue
		}
		logits, err := set.Tensor(li)
		require.NoError(t, err)
		mask := make([]uint64, (len(logits)+63)/64)
		for i := range mask {
			mask[i] = r.Uint64() // about half the vocabulary
		}
		masked := make([]float32, len(logits))
		require.Positive(t, generation.MaskLogits(masked, logits, mask))
		for _, cfg := range set.Manifest.Sampling {
			ti, ok := set.Find(c.ID, "sampling_"+cfg.Name, model.NoLayer)
			if !ok {
				continue
			}
			want, err := set.Tensor(ti)
			require.NoError(t, err)
			p := cfg.Params()
			got := sampling.Process(masked, c.Tokens, p)
			truncates := p.TopK > 0 || p.TopP < 1 || p.MinP > 0
			var allowedMass, sum float64
			for i, v := range want {
				if grammar.Allowed(mask, i) {
					allowedMass += float64(v)
				}
			}
			var ratio float64 // got/want of the tokens both keep, all alike
			for i, g := range got {
				sum += float64(g)
				if !grammar.Allowed(mask, i) {
					require.Zero(t, g, "case %s %s: masked token %d", c.ID, cfg.Name, i)
					continue
				}
				switch {
				case !truncates:
					w := float64(want[i]) / allowedMass
					require.InDelta(t, w, float64(g), 1e-6+1e-5*w, "case %s %s: token %d", c.ID, cfg.Name, i)
				case g > 1e-6 && want[i] > 1e-6:
					q := float64(g) / float64(want[i])
					if ratio == 0 {
						ratio = q
					}
					require.InDelta(t, 1, q/ratio, 1e-4, "case %s %s: token %d's odds moved", c.ID, cfg.Name, i)
				}
			}
			require.InDelta(t, 1, sum, 1e-5, "case %s %s", c.ID, cfg.Name)
			checked++
		}
	}
	require.GreaterOrEqual(t, checked, 6, "the default set's sampling tensors")
}
