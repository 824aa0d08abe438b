package generation_test

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/generation"
	"github.com/llorch/llorch-check/internal/fixture/tiny"
	"github.com/llorch/llorch-check/references"
	"github.com/llorch/llorch-check/sampling"
)

// TestGreedyGenerationMatchesReferences is checkpoint 12: greedy tokens,
// text and stop reason of every committed case.
func TestGreedyGenerationMatchesReferences(t *testing.T) {
	m, tok, set := tiny.Load(t)
	gen := set.Manifest.Generation
	require.NotNil(t, gen)
	require.Len(t, gen.Results, 3)
	for _, want := range gen.Results {
		t.Run(want.Case, func(t *testing.T) {
			c, ok := set.Case(want.Case)
			require.True(t, ok)
			// Every committed case fits: "long" is 112 tokens + 16 = 128 = n_positions.
			require.Equal(t, references.StopMaxTokens, want.StopReason)
			req := generation.Request{Prompt: c.Tokens, MaxTokens: gen.N, Params: sampling.Params{Temperature: 0}}
			got, err := generation.Generate(context.Background(), generation.NewModelDecoder(m), tok, req, nil)
			require.NoError(t, err)
			require.Equal(t, want.Tokens, got.Tokens)
			require.NotNil(t, want.Text)
			require.Equal(t, *want.Text, got.Text)
			require.Equal(t, generation.StopMaxTokens, got.StopReason)
			require.Equal(t, len(c.Tokens), got.PromptTokens)
		})
	}
}

// TestLoglikelihoodMatchesReferences checks the committed lm-eval pairs:
// tokenization exactly, the score within 1e-4, is_greedy exactly, through
// both the one-pass model decoder and the prefill+step fallback.
func TestLoglikelihoodMatchesReferences(t *testing.T) {
	m, tok, set := tiny.Load(t)
	require.NotEmpty(t, set.Manifest.Loglikelihood)
	decoders := map[string]generation.Decoder{
		"model":    generation.NewModelDecoder(m),
		"stepwise": stepOnly{generation.NewModelDecoder(m)},
	}
	for i, want := range set.Manifest.Loglikelihood {
		ctxT, contT, err := generation.EncodePair(tok, want.Context, want.Continuation)
		require.NoError(t, err)
		require.Equal(t, want.ContextTokens, ctxT, "pair %d context", i)
		require.Equal(t, want.ContinuationTokens, contT, "pair %d continuation", i)
		for name, d := range decoders {
			got, err := generation.LoglikelihoodTokens(context.Background(), d, ctxT, contT)
			require.NoError(t, err)
			require.InDelta(t, want.LL, got.LL, 1e-4, "pair %d via %s", i, name)
			require.Equal(t, want.IsGreedy, got.IsGreedy, "pair %d via %s", i, name)
			if want.LLF64 != nil {
				require.LessOrEqual(t, math.Abs(got.LL-*want.LLF64), 1e-4, "pair %d via %s vs float64", i, name)
			}
		}
	}
}

// stepOnly hides the model decoder's optional capabilities.
type stepOnly struct{ d generation.Decoder }

func (s stepOnly) Prefill(ctx context.Context, tokens []int) ([]float32, error) {
	return s.d.Prefill(ctx, tokens)
}
func (s stepOnly) Step(ctx context.Context, token int) ([]float32, error) {
	return s.d.Step(ctx, token)
}
func (s stepOnly) ContextLength() int { return s.d.ContextLength() }
func (s stepOnly) VocabSize() int     { return s.d.VocabSize() }
