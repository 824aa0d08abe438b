package checkpoints

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/generation"
	"github.com/llorch/llorch-check/grammar"
	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/references"
	"github.com/llorch/llorch-check/sampling"
	"github.com/llorch/llorch-check/tensors"
	"github.com/llorch/llorch-check/tokenizer"
)

// TestSamplingMaskKeepsOdds is checkpoint 11 under a grammar's mask: on
// PyTorch's last-position logits of every case and every processor
// configuration of the default set, the tokens a mask removes get
// probability exactly 0 and the others keep their relative odds. Where
// the processors act token by token (temperature, penalties, bias) the
// masked distribution is PyTorch's renormalised over the allowed tokens;
// where they truncate (top-k, top-p, min-p) the truncation sees only the
// allowed tokens, so the check is the odds of the tokens both keep. The
// masks are a random half of the vocabulary and those of each structured
// output form (bounds, formats, patterns, merged keywords) part-way
// through its text, over the tiny model's own tokens.
func TestSamplingMaskKeepsOdds(t *testing.T) {
	set, err := references.Open(fixture.TinyReferences())
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(11, 11))
	forms := formMasks(t)
	checked := 0
	for _, c := range set.Manifest.Cases {
		li, ok := set.Find(c.ID, tensors.LastLogits, model.NoLayer)
		if !ok {
			continue
		}
		logits, err := set.Tensor(li)
		require.NoError(t, err)
		random := make([]uint64, (len(logits)+63)/64)
		for i := range random {
			random[i] = r.Uint64() // about half the vocabulary
		}
		masks := append([]namedMask{{"random", random}}, forms...)
		for _, m := range masks {
			checked += checkMaskKeepsOdds(t, set, c, logits, m)
		}
	}
	require.GreaterOrEqual(t, checked, 6*(1+len(forms)), "the default set's sampling tensors under every mask")
}

type namedMask struct {
	name string
	mask []uint64
}

// formMasks are the masks of each structured output form over the tiny
// model's tokens, after a prefix of its text.
func formMasks(t *testing.T) []namedMask {
	tok, err := tokenizer.Load(fixture.TinyModel())
	require.NoError(t, err)
	tokens := make([][]byte, tok.VocabSize())
	for id := range tokens {
		tokens[id], _ = tok.TokenBytes(id)
	}
	v := grammar.NewVocab(tokens, []int{generation.EOSToken}, nil)
	var out []namedMask
	for _, f := range []struct{ schema, prefix string }{
		{`{"type":"integer","exclusiveMinimum":0}`, ``},
		{`{"type":"integer","minimum":18,"maximum":120}`, `1`},
		{`{"type":"number","minimum":0}`, `0`},
		{`{"type":"number","exclusiveMinimum":-3,"exclusiveMaximum":12}`, `11`},
		{`{"type":"string","format":"email"}`, `"ab`},
		{`{"type":"string","format":"uuid"}`, `"0123`},
		{`{"type":"string","format":"date-time"}`, `"2024-0`},
		{`{"type":"string","pattern":"^[A-Z]{3}-\\d{2}$"}`, `"AB`},
		{`{"enum":["a",1,22],"type":"integer"}`, `2`},
		{`{"allOf":[{"type":"integer"}],"maximum":3}`, ``},
	} {
		g, err := grammar.FromJSONSchema([]byte(f.schema))
		require.NoError(t, err, f.schema)
		m := g.NewMatcher()
		require.NoError(t, m.Accept([]byte(f.prefix)), f.schema)
		mask := slices.Clone(m.Mask(v))
		allowed := 0
		for id := range tokens {
			if grammar.Allowed(mask, id) {
				allowed++
			}
		}
		require.True(t, allowed > 0 && allowed < len(tokens)/2, "%s after %q allows %d tokens", f.schema, f.prefix, allowed)
		out = append(out, namedMask{f.schema + " after " + f.prefix, mask})
	}
	return out
}

// checkMaskKeepsOdds checks one case's logits under mask against every
// sampling configuration it has, and returns how many it checked.
func checkMaskKeepsOdds(t *testing.T, set *references.Set, c references.Case, logits []float32, m namedMask) int {
	t.Helper()
	mask := m.mask
	masked := make([]float32, len(logits))
	require.Positive(t, generation.MaskLogits(masked, logits, mask), m.name)
	checked := 0
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
				require.Zero(t, g, "case %s %s, mask %s: masked token %d", c.ID, cfg.Name, m.name, i)
				continue
			}
			switch {
			case !truncates:
				w := float64(want[i]) / allowedMass
				require.InDelta(t, w, float64(g), 1e-6+1e-5*w, "case %s %s, mask %s: token %d", c.ID, cfg.Name, m.name, i)
			case g > 1e-6 && want[i] > 1e-6:
				q := float64(g) / float64(want[i])
				if ratio == 0 {
					ratio = q
				}
				require.InDelta(t, 1, q/ratio, 1e-4, "case %s %s, mask %s: token %d's odds moved", c.ID, cfg.Name, m.name, i)
			}
		}
		require.InDelta(t, 1, sum, 1e-5, "case %s %s, mask %s", c.ID, cfg.Name, m.name)
		checked++
	}
	return checked
}
