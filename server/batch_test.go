package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture/tiny"
	"github.com/llorch/llorch-check/server"
)

func TestGenerateInOrder(t *testing.T) {
	ts := start(t, server.Config{})
	_, _, set := tiny.Load(t)
	gen := set.Manifest.Generation
	var prompts, want []string
	promptTokens, completionTokens := 0, 0
	// Reverse order, so an implementation that sorted would fail.
	for i := len(gen.Results) - 1; i >= 0; i-- {
		c, _ := set.Case(gen.Results[i].Case)
		prompts = append(prompts, *c.Prompt)
		want = append(want, *gen.Results[i].Text)
		promptTokens += len(c.Tokens)
		completionTokens += len(gen.Results[i].Tokens)
	}
	out := ts.call(t, "POST", "/generate", map[string]any{"prompts": prompts, "max_tokens": gen.N, "temperature": 0}, http.StatusOK)
	got := []string{}
	for _, c := range out["completions"].([]any) {
		got = append(got, c.(string))
	}
	require.Equal(t, want, got)
	u := out["usage"].(map[string]any)
	require.EqualValues(t, promptTokens, u["prompt_tokens"])
	require.EqualValues(t, completionTokens, u["completion_tokens"])
	require.EqualValues(t, promptTokens+completionTokens, u["total_tokens"])
}

func TestGenerateSeeded(t *testing.T) {
	ts := start(t, server.Config{})
	body := map[string]any{"prompts": []string{"Hello", "Hello"}, "max_tokens": 12, "seed": 7}
	a := ts.call(t, "POST", "/generate", body, http.StatusOK)
	b := ts.call(t, "POST", "/generate", body, http.StatusOK)
	require.Equal(t, a["completions"], b["completions"])
}

// TestLoglikelihoodMatchesReferences compares with PyTorch's scores of the
// reference set's pairs within 1e-4.
func TestLoglikelihoodMatchesReferences(t *testing.T) {
	ts := start(t, server.Config{})
	_, _, set := tiny.Load(t)
	var prompts, conts []string
	for _, p := range set.Manifest.Loglikelihood {
		prompts = append(prompts, p.Context)
		conts = append(conts, p.Continuation)
	}
	out := ts.call(t, "POST", "/loglikelihood", map[string]any{"prompts": prompts, "continuations": conts}, http.StatusOK)
	ll, greedy := out["ll"].([]any), out["is_greedy"].([]any)
	require.Len(t, ll, len(prompts))
	for i, p := range set.Manifest.Loglikelihood {
		require.InDelta(t, p.LL, ll[i].(float64), 1e-4, "pair %d", i)
		require.Equal(t, p.IsGreedy, greedy[i], "pair %d", i)
	}
}

// TestLoglikelihoodGreedy: a continuation made of the model's own greedy
// tokens must report is_greedy true.
func TestLoglikelihoodGreedy(t *testing.T) {
	ts := start(t, server.Config{})
	_, _, set := tiny.Load(t)
	r := set.Manifest.Generation.Results[0]
	c, _ := set.Case(r.Case)
	out := ts.call(t, "POST", "/loglikelihood", map[string]any{
		"prompts": []string{*c.Prompt}, "continuations": []string{(*r.Text)[:len("Beast")]}}, http.StatusOK)
	require.Equal(t, true, out["is_greedy"].([]any)[0])
}
