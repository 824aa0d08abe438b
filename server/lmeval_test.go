package server_test

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/internal/fixture/tiny"
	"github.com/llorch/llorch-check/server"
)

// The request bodies below are those lm-evaluation-harness builds in
// lm_eval/models/openai_completions.py (_create_payload of
// local-completions, local-chat-completions and openai-chat-completions:
// seed 1234, temperature 0, stop = until + the EOS string), and the
// answers are read as its parse_logprobs and parse_generations read them.

// lmevalChoices returns the choices of out in index order, as lm-eval
// sorts them.
func lmevalChoices(t *testing.T, out map[string]any) []map[string]any {
	t.Helper()
	var cs []map[string]any
	for _, c := range out["choices"].([]any) {
		cs = append(cs, c.(map[string]any))
	}
	slices.SortFunc(cs, func(a, b map[string]any) int { return cmp.Compare(a["index"].(float64), b["index"].(float64)) })
	return cs
}

// TestLMEvalLoglikelihoodBatch: local-completions scores a batch of
// (context, continuation) pairs as token ids in one request; its sums
// and greedy flags equal PyTorch's.
func TestLMEvalLoglikelihoodBatch(t *testing.T) {
	ts := start(t, server.Config{})
	_, _, set := tiny.Load(t)
	pairs := set.Manifest.Loglikelihood
	var prompts [][]int
	for _, p := range pairs {
		prompts = append(prompts, slices.Concat(p.ContextTokens, p.ContinuationTokens))
	}
	body := fmt.Sprintf(`{"model": "tiny-gpt2", "prompt": %s, "temperature": 0, "max_tokens": 1, "logprobs": 1, "seed": 1234, "echo": true}`,
		fixture.MustJSON(t, prompts))
	out := ts.call(t, "POST", "/v1/completions", []byte(body), http.StatusOK)
	choices := lmevalChoices(t, out)
	require.Len(t, choices, len(pairs))
	for i, c := range choices {
		ctxlen := len(pairs[i].ContextTokens)
		lp := c["logprobs"].(map[string]any)
		tlp := lp["token_logprobs"].([]any)
		tops := lp["top_logprobs"].([]any)
		sum, greedy := 0.0, true
		for j := ctxlen; j < len(tlp)-1; j++ {
			v := tlp[j].(float64)
			sum += v
			best := -1e300
			for _, x := range tops[j].(map[string]any) {
				best = max(best, x.(float64))
			}
			if v != best {
				greedy = false
			}
		}
		require.InDelta(t, pairs[i].LL, sum, 1e-4, "pair %d", i)
		require.Equal(t, pairs[i].IsGreedy, greedy, "pair %d", i)
	}
}

// TestLMEvalGenerate: generate_until through local-completions (prompts as
// strings, tokenized_requests=False) and the chat routes gives the greedy
// reference text, cut at the first stop string.
func TestLMEvalGenerate(t *testing.T) {
	ts := start(t, server.Config{})
	_, _, set := tiny.Load(t)
	r := set.Manifest.Generation.Results[1]
	c, _ := set.Case(r.Case)
	words := strings.Fields(*r.Text)
	mid := " " + words[len(words)/2] // a stop string the greedy text reaches
	for _, until := range [][]string{{"\n\n", "<|endoftext|>"}, {mid, "<|endoftext|>"}} {
		want := *r.Text
		if i := strings.Index(want, until[0]); i >= 0 {
			want = want[:i]
		}
		require.Equal(t, until[0] == mid, len(want) < len(*r.Text), "only the mid-text stop cuts")
		stop := fixture.MustJSON(t, until)
		n := len(r.Tokens)
		for _, req := range []struct{ route, body, field string }{
			{"/v1/completions", fmt.Sprintf(`{"prompt": [%s], "model": "tiny-gpt2", "max_tokens": %d, "temperature": 0, "stop": %s, "seed": 1234}`,
				fixture.MustJSON(t, *c.Prompt), n, stop), "text"},
			{"/v1/chat/completions", fmt.Sprintf(`{"messages": [{"role": "user", "content": %s}], "model": "tiny-gpt2", "max_tokens": %d, "temperature": 0, "stop": %s, "seed": 1234}`,
				fixture.MustJSON(t, *c.Prompt), n, stop), "message"},
			{"/v1/chat/completions", fmt.Sprintf(`{"messages": [{"role": "user", "content": %s}], "model": "tiny-gpt2", "max_completion_tokens": %d, "temperature": 0, "stop": %s, "seed": 1234}`,
				fixture.MustJSON(t, *c.Prompt), n, stop), "message"},
		} {
			out := ts.call(t, "POST", req.route, []byte(req.body), http.StatusOK)
			ch := lmevalChoices(t, out)[0]
			got, _ := ch["text"].(string)
			if req.field == "message" {
				// The chat prompt is the template's, so the reference is the
				// completion of that prompt with the same stop strings.
				got = ch["message"].(map[string]any)["content"].(string)
				plain := ts.call(t, "POST", "/v1/completions", map[string]any{"prompt": "user: " + *c.Prompt + "\nassistant:",
					"max_tokens": n, "temperature": 0, "stop": until}, http.StatusOK)
				require.Equal(t, choice0(t, plain)["text"], got, req.body)
				continue
			}
			require.Equal(t, want, got, req.body)
		}
	}
}
