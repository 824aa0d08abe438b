package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/generation"
	"github.com/llorch/llorch-check/internal/fixture/tiny"
	"github.com/llorch/llorch-check/sampling"
	"github.com/llorch/llorch-check/server"
)

// TestRoutesReportGenerationRules: each rule generation (or sampling) owns
// reaches every route family through generation's own FieldError, in the
// route's wire shape and under the route's name for the field. The wire
// message must be generation's word for word, so a route that checks the
// rule itself, or stops checking it, fails here.
func TestRoutesReportGenerationRules(t *testing.T) {
	ts := start(t, server.Config{})
	m, tok, _ := tiny.Load(t)
	n, V := m.Config.NPositions, m.Config.VocabSize
	words := func(k int) string { return strings.Repeat(" word", k) } // k tokens
	// rule returns the one FieldError a validator gives.
	rule := func(err error) *generation.FieldError {
		t.Helper()
		es := generation.AsFieldErrors(err)
		require.Len(t, es, 1, "%v", err)
		return es[0]
	}
	request := func(prompt string, maxTokens int, def bool) *generation.FieldError {
		return rule(generation.Request{Prompt: tok.Encode(prompt), MaxTokens: maxTokens, DefaultMaxTokens: def,
			Params: sampling.DefaultParams()}.Validate(n, V))
	}
	stops := func(stop ...string) *generation.FieldError {
		return rule(generation.Request{Prompt: []int{1}, MaxTokens: 1, Params: sampling.DefaultParams(), Stop: stop}.Validate(n, V))
	}
	bias := func(id int, b float64) *generation.FieldError {
		err := sampling.CheckLogitBias(id, b, V)
		require.Error(t, err)
		return &generation.FieldError{Code: "range", Message: err.Error()}
	}
	ctxT, contT, err := generation.EncodePair(tok, "a", words(n+1))
	require.NoError(t, err)
	longStop := strings.Repeat("x", generation.MaxStopBytes+1)
	five := []string{"a", "b", "c", "d", "e"}
	job := func(body map[string]any) map[string]any { body["job_id"] = "r"; return body }

	for _, c := range []struct {
		name  string
		path  string
		body  map[string]any
		field string // the route's name for it
		want  *generation.FieldError
	}{
		// The context length.
		{"execute: max_tokens beyond the context", "/execute", job(map[string]any{"prompt": "Hi", "max_tokens": n}),
			"max_tokens", request("Hi", n, false)},
		{"execute: a prompt that leaves no room", "/execute", job(map[string]any{"prompt": words(n)}),
			"max_tokens", request(words(n), 100, true)},
		{"generate: max_tokens beyond the context", "/generate", map[string]any{"prompts": []string{"Hi", words(120)}, "max_tokens": 9},
			"prompts[1]", request(words(120), 9, false)},
		{"generate: a prompt that leaves no room", "/generate", map[string]any{"prompts": []string{words(n)}},
			"prompts[0]", request(words(n), 128, true)},
		{"loglikelihood: a continuation beyond the context", "/loglikelihood", map[string]any{"prompts": []string{"a"}, "continuations": []string{words(n + 1)}},
			"continuations[0]", rule(generation.ValidatePair(ctxT, contT, n, V))},
		{"completions: max_tokens beyond the context", "/v1/completions", map[string]any{"prompt": words(120), "max_tokens": 9},
			"max_tokens", request(words(120), 9, false)},
		{"completions: the second prompt", "/v1/completions", map[string]any{"prompt": []string{"Hi", words(120)}, "max_tokens": 9},
			"prompt[1]", request(words(120), 9, false)},
		{"completions: a prompt beyond the context", "/v1/completions", map[string]any{"prompt": words(n + 1)},
			"prompt", request(words(n+1), 16, true)},
		{"chat: max_tokens beyond the context", "/v1/chat/completions", map[string]any{"messages": chatMessages, "max_tokens": n},
			"max_tokens", request(chatPrompt, n, false)},
		{"embeddings: an input beyond the context", "/v1/embeddings", map[string]any{"input": words(n + 1)},
			"input", rule(generation.ValidatePrompt(tok.Encode(words(n+1)), n, V))},
		// Stop strings.
		{"execute: a long stop string", "/execute", job(map[string]any{"prompt": "Hi", "stop": []string{"a", longStop}}),
			"stop[1]", stops("a", longStop)},
		{"execute: five stop strings", "/execute", job(map[string]any{"prompt": "Hi", "stop": five}), "stop", stops(five...)},
		{"generate: an empty stop string", "/generate", map[string]any{"prompts": []string{"Hi"}, "stop": []string{""}}, "stop[0]", stops("")},
		{"generate: five stop strings, no prompts", "/generate", map[string]any{"stop": five}, "stop", stops(five...)},
		{"completions: a long stop string", "/v1/completions", map[string]any{"prompt": "Hi", "stop": longStop}, "stop[0]", stops(longStop)},
		{"chat: five stop strings", "/v1/chat/completions", map[string]any{"messages": chatMessages, "stop": five}, "stop", stops(five...)},
		// Logit bias, sampling's rule.
		{"execute: a bias outside the vocabulary", "/execute", job(map[string]any{"prompt": "Hi", "logit_bias": map[string]any{"50257": 1}}),
			"logit_bias.50257", bias(50257, 1)},
		{"completions: a bias beyond the limit", "/v1/completions", map[string]any{"prompt": "Hi", "logit_bias": map[string]any{"5": 101}},
			"logit_bias.5", bias(5, 101)},
		{"chat: a bias outside the vocabulary", "/v1/chat/completions", map[string]any{"messages": chatMessages, "logit_bias": map[string]any{"-1": 1}},
			"logit_bias.-1", bias(-1, 1)},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := ts.call(t, "POST", c.path, c.body, http.StatusBadRequest)
			if strings.HasPrefix(c.path, "/v1/") {
				e := out["error"].(map[string]any)
				require.Equal(t, c.field, e["param"], e["message"])
				require.Equal(t, "INVALID_REQUEST", e["code"])
				require.Contains(t, e["message"], c.field+": "+c.want.Message)
				return
			}
			var got []map[string]any
			for _, e := range out["errors"].([]any) {
				if fe := e.(map[string]any); fe["field"] == c.field {
					got = append(got, fe)
				}
			}
			require.Len(t, got, 1, "%v", out)
			require.Equal(t, c.want.Code, got[0]["constraint"])
			require.Equal(t, c.want.Message, got[0]["message"])
		})
	}
}
