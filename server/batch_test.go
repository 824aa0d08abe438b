package server_test

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/generation"
	"github.com/llorch/llorch-check/model"
)

// TestGenerateInOrder: /generate answers each prompt with the reference's
// greedy text, in the order asked, on GPT-2 and every Llama-family model.
func TestGenerateInOrder(t *testing.T) {
	for _, s := range everyModel(t) {
		t.Run(s.name, func(t *testing.T) {
			gen, results := s.set.Manifest.Generation, s.textResults(t)
			var prompts, want []string
			promptTokens, completionTokens := 0, 0
			// Reverse order, so an implementation that sorted would fail.
			for i := len(results) - 1; i >= 0; i-- {
				c, _ := s.set.Case(results[i].Case)
				prompts = append(prompts, *c.Prompt)
				want = append(want, s.continuation(t, results[i]))
				promptTokens += len(c.Tokens)
				completionTokens += len(results[i].Tokens)
			}
			out := s.ts.call(t, "POST", "/generate", map[string]any{"prompts": prompts, "max_tokens": gen.N, "temperature": 0}, http.StatusOK)
			got := []string{}
			for _, c := range out["completions"].([]any) {
				got = append(got, c.(string))
			}
			require.Equal(t, want, got)
			u := out["usage"].(map[string]any)
			require.EqualValues(t, promptTokens, u["prompt_tokens"])
			require.EqualValues(t, completionTokens, u["completion_tokens"])
			require.EqualValues(t, promptTokens+completionTokens, u["total_tokens"])
		})
	}
}

// TestGenerateSeeded: a seed reproduces a sampled /generate, and two
// equal prompts of one request sample alike.
func TestGenerateSeeded(t *testing.T) {
	for _, s := range everyModel(t) {
		t.Run(s.name, func(t *testing.T) {
			body := map[string]any{"prompts": []string{"Hello", "Hello"}, "max_tokens": 12, "seed": 7}
			a := s.ts.call(t, "POST", "/generate", body, http.StatusOK)
			b := s.ts.call(t, "POST", "/generate", body, http.StatusOK)
			require.Equal(t, a["completions"], b["completions"])
			cs := a["completions"].([]any)
			require.Equal(t, cs[0], cs[1])
			body["seed"] = 8
			c := s.ts.call(t, "POST", "/generate", body, http.StatusOK)
			require.NotEqual(t, a["completions"], c["completions"], "another seed samples differently")
		})
	}
}

// TestLoglikelihoodMatchesReferences compares with PyTorch's scores of the
// reference set's pairs within 1e-4.
func TestLoglikelihoodMatchesReferences(t *testing.T) {
	for _, s := range everyModel(t) {
		t.Run(s.name, func(t *testing.T) {
			var prompts, conts []string
			for _, p := range s.set.Manifest.Loglikelihood {
				prompts = append(prompts, p.Context)
				conts = append(conts, p.Continuation)
			}
			out := s.ts.call(t, "POST", "/loglikelihood", map[string]any{"prompts": prompts, "continuations": conts}, http.StatusOK)
			ll, greedy := out["ll"].([]any), out["is_greedy"].([]any)
			require.Len(t, ll, len(prompts))
			for i, p := range s.set.Manifest.Loglikelihood {
				require.InDelta(t, p.LL, ll[i].(float64), 1e-4, "pair %d", i)
				require.Equal(t, p.IsGreedy, greedy[i], "pair %d", i)
			}
		})
	}
}

// TestLoglikelihoodGreedy: a continuation made of the model's own greedy
// tokens after the context reports is_greedy true, and one with a token
// off them false. The greedy tokens are a forward pass's arg-max after the
// context as /loglikelihood encodes it (lm-eval's way, no BOS), the first
// of them whose text encodes back to themselves.
func TestLoglikelihoodGreedy(t *testing.T) {
	const context = "Hello, world."
	for _, s := range everyModel(t) {
		t.Run(s.name, func(t *testing.T) {
			ctx, _, err := generation.EncodePair(s.tok, context, "x")
			require.NoError(t, err)
			greedy := ctx
			cont := ""
			for len(greedy) < len(ctx)+4 && cont == "" {
				greedy = append(greedy, argmaxNext(t, s.m, greedy))
				text, err := s.tok.DecodeContinuation(greedy[len(ctx):])
				require.NoError(t, err)
				if _, ids, err := generation.EncodePair(s.tok, context, text); err == nil && slices.Equal(ids, greedy[len(ctx):]) {
					cont = text
				}
			}
			require.NotEmpty(t, cont, "no greedy continuation of %q of up to 4 tokens encodes back to its tokens: %v", context, greedy[len(ctx):])
			out := s.ts.call(t, "POST", "/loglikelihood", map[string]any{
				"prompts": []string{context, context}, "continuations": []string{cont, cont + " zq"}}, http.StatusOK)
			require.Equal(t, []any{true, false}, out["is_greedy"], "continuation %q", cont)
		})
	}
}

// argmaxNext is the token a forward pass over ids ranks first next.
func argmaxNext(t *testing.T, m *model.Model, ids []int) int {
	t.Helper()
	logits, err := m.Forward(context.Background(), m.NewCache(), ids, model.ForwardOptions{})
	require.NoError(t, err)
	row := logits[len(logits)-m.Config.VocabSize:]
	best := 0
	for i, v := range row {
		if v > row[best] {
			best = i
		}
	}
	return best
}
