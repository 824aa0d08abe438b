package server_test

import (
	"context"
	"math"
	"net/http"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/model"
)

// TestLoglikelihoodEmptyContext: an empty (or whitespace-only) context
// conditions on lm-eval's prefix_token_id, the Llama family's BOS, not its
// EOS, and GPT-2's <|endoftext|>: /loglikelihood equals an independent
// forward of [prefix]+continuation, and so does the completions echo of
// those ids, what lm-eval sends for empty-context and rolling requests
// (issue #42 item 3).
func TestLoglikelihoodEmptyContext(t *testing.T) {
	for _, s := range everyModel(t) {
		pre := 50256 // GPT-2's <|endoftext|>
		if s.name != "tiny-gpt2" {
			bos, _ := s.tok.BOS()
			require.NotContains(t, s.m.Config.EOSTokens(), bos, "%s: BOS is not an EOS, so the test tells them apart", s.name)
			pre = bos
		}
		t.Run(s.name, func(t *testing.T) {
			for _, context := range []string{"", "  "} {
				cont := context + "Hello, world"
				ids := slices.Concat([]int{pre}, s.tok.EncodeSpecial(cont))
				want := forwardLL(t, s.m, ids)

				out := s.ts.call(t, "POST", "/loglikelihood", map[string]any{"prompts": []string{context}, "continuations": []string{"Hello, world"}}, http.StatusOK)
				require.InDelta(t, want, out["ll"].([]any)[0].(float64), 1e-4, "/loglikelihood, context %q", context)

				echo := s.ts.call(t, "POST", "/v1/completions", map[string]any{"prompt": ids, "max_tokens": 0, "echo": true, "logprobs": 1}, http.StatusOK)
				sum := 0.0
				for _, v := range choice0(t, echo)["logprobs"].(map[string]any)["token_logprobs"].([]any)[1:] {
					sum += v.(float64)
				}
				require.InDelta(t, want, sum, 1e-4, "completions echo, context %q", context)
			}
		})
	}
}

// forwardLL is the log-likelihood of ids[1:] after ids[0] from one forward
// pass, log-softmax in float64.
func forwardLL(t *testing.T, m *model.Model, ids []int) float64 {
	t.Helper()
	logits, err := m.Forward(context.Background(), m.NewCache(), ids[:len(ids)-1], model.ForwardOptions{AllLogits: true})
	require.NoError(t, err)
	V, ll := m.Config.VocabSize, 0.0
	for i, target := range ids[1:] {
		row := logits[i*V : (i+1)*V]
		top := math.Inf(-1)
		for _, x := range row {
			top = max(top, float64(x))
		}
		z := 0.0
		for _, x := range row {
			z += math.Exp(float64(x) - top)
		}
		ll += float64(row[target]) - top - math.Log(z)
	}
	return ll
}
