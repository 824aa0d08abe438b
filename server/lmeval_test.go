package server_test

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture"
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
// and greedy flags equal PyTorch's, on GPT-2 and every Llama-family model.
func TestLMEvalLoglikelihoodBatch(t *testing.T) {
	for _, s := range everyModel(t) {
		t.Run(s.name, func(t *testing.T) {
			pairs := s.set.Manifest.Loglikelihood
			var prompts [][]int
			for _, p := range pairs {
				prompts = append(prompts, slices.Concat(p.ContextTokens, p.ContinuationTokens))
			}
			body := fmt.Sprintf(`{"model": %q, "prompt": %s, "temperature": 0, "max_tokens": 1, "logprobs": 1, "seed": 1234, "echo": true}`,
				s.name, fixture.MustJSON(t, prompts))
			out := s.ts.call(t, "POST", "/v1/completions", []byte(body), http.StatusOK)
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
		})
	}
}

// TestLMEvalGenerate: generate_until through local-completions (prompts as
// strings, tokenized_requests=False) gives the greedy reference text, cut
// at the first stop string (lm-eval's until and the EOS token's text); the
// chat routes give the completion of the model's chat template's prompt,
// cut alike. On GPT-2 and every Llama-family model.
func TestLMEvalGenerate(t *testing.T) {
	for _, s := range everyModel(t) {
		t.Run(s.name, func(t *testing.T) {
			r := s.set.Manifest.Generation.Results[0] // "hello": short enough for every chat template's prompt
			c, _ := s.set.Case(r.Case)
			full := s.continuation(t, r)
			mid := midStop(t, s, r.Tokens) // a stop string the greedy text reaches
			eos, err := s.tok.Decode([]int{s.eos()})
			require.NoError(t, err)
			ids := s.chatIDs(t, server.ChatMessage{Role: "user", Content: *c.Prompt})
			for _, until := range [][]string{{"\n\n", eos}, {mid, eos}} {
				want := full
				if i := strings.Index(want, until[0]); i >= 0 {
					want = want[:i]
				}
				require.Equal(t, until[0] == mid, len(want) < len(full), "only the mid-text stop cuts")
				stop := fixture.MustJSON(t, until)
				n := len(r.Tokens)
				prompt := fixture.MustJSON(t, *c.Prompt)
				out := s.ts.call(t, "POST", "/v1/completions", []byte(fmt.Sprintf(`{"prompt": [%s], "model": %q, "max_tokens": %d, "temperature": 0, "stop": %s, "seed": 1234}`,
					prompt, s.name, n, stop)), http.StatusOK)
				require.Equal(t, want, lmevalChoices(t, out)[0]["text"], "stop %q", until)

				// The chat prompt is the template's, so the reference is the
				// completion of its ids with the same stop strings.
				plain := s.ts.call(t, "POST", "/v1/completions", map[string]any{"prompt": ids, "max_tokens": n, "temperature": 0, "stop": until}, http.StatusOK)
				for _, length := range []string{"max_tokens", "max_completion_tokens"} {
					body := fmt.Sprintf(`{"messages": [{"role": "user", "content": %s}], "model": %q, %q: %d, "temperature": 0, "stop": %s, "seed": 1234}`,
						prompt, s.name, length, n, stop)
					out := s.ts.call(t, "POST", "/v1/chat/completions", []byte(body), http.StatusOK)
					got := lmevalChoices(t, out)[0]["message"].(map[string]any)["content"]
					require.Equal(t, choice0(t, plain)["text"], got, body)
				}
			}
		})
	}
}

// midStop is the text of a token from the middle of a greedy answer on,
// the first that is whole characters: a stop string the answer reaches.
func midStop(t *testing.T, s servedModel, tokens []int) string {
	t.Helper()
	for _, id := range tokens[len(tokens)/2:] {
		text, err := s.tok.DecodeContinuation([]int{id})
		require.NoError(t, err)
		if strings.TrimSpace(text) != "" && !strings.ContainsRune(text, utf8.RuneError) {
			return text
		}
	}
	t.Fatalf("%s: no token of %v after the middle is whole characters", s.name, tokens)
	return ""
}
