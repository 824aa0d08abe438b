package server_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/server"
)

// TestCompletionsParametersHonoured: OpenAI's sampling parameters reach the
// sampler. A +100 bias on end-of-text ends a greedy completion at once; a
// frequency penalty changes the greedy continuation of a repetitive text.
func TestCompletionsParametersHonoured(t *testing.T) {
	ts := start(t, server.Config{})
	greedy := func(extra map[string]any) map[string]any {
		body := map[string]any{"prompt": "the the the the the the", "max_tokens": 12, "temperature": 0}
		for k, v := range extra {
			body[k] = v
		}
		return choice0(t, ts.call(t, "POST", "/v1/completions", body, http.StatusOK))
	}
	plain := greedy(nil)
	require.Equal(t, "length", plain["finish_reason"])

	penalised := greedy(map[string]any{"frequency_penalty": 2, "presence_penalty": 2})
	require.NotEqual(t, plain["text"], penalised["text"])
	require.Equal(t, plain["text"], greedy(map[string]any{"frequency_penalty": 0, "presence_penalty": 0, "logit_bias": map[string]float64{}})["text"],
		"neutral values change nothing")
}

// TestLogitBiasOnTheEOS: logit_bias keys are the model's own ids, on
// GPT-2 and every Llama-family model: +100 on its end-of-text token ends
// a greedy completion at once, on completions and chat.
func TestLogitBiasOnTheEOS(t *testing.T) {
	for _, s := range everyModel(t) {
		t.Run(s.name, func(t *testing.T) {
			bias := map[string]float64{fmt.Sprint(s.eos()): 100}
			eot := choice0(t, s.ts.call(t, "POST", "/v1/completions", map[string]any{"prompt": "the the the", "max_tokens": 12, "temperature": 0, "logit_bias": bias}, http.StatusOK))
			require.Equal(t, "stop", eot["finish_reason"], "the biased end-of-text token ends the completion")
			require.Empty(t, eot["text"])
			chat := choice0(t, s.ts.call(t, "POST", "/v1/chat/completions", map[string]any{"messages": chatMessages[1:], "max_tokens": 12, "temperature": 0, "logit_bias": bias}, http.StatusOK))
			require.Equal(t, "stop", chat["finish_reason"])
			require.Equal(t, map[string]any{"role": "assistant", "content": ""}, chat["message"])
		})
	}
}

// TestCompletionsParametersRejected: a parameter that is not honoured is a
// 400 naming it, never a silent 200; --lenient lets unknown fields through.
func TestCompletionsParametersRejected(t *testing.T) {
	ts := start(t, server.Config{})
	lenient := start(t, server.Config{Lenient: true})
	for _, c := range []struct {
		name  string
		extra map[string]any
		param string
	}{
		{"bias key not an id", map[string]any{"logit_bias": map[string]any{"abc": "x"}}, "logit_bias.abc"},
		{"bias not a number", map[string]any{"logit_bias": map[string]any{"5": "x"}}, "logit_bias.5"},
		{"bias token outside the vocabulary", map[string]any{"logit_bias": map[string]any{"50257": 1}}, "logit_bias.50257"},
		{"bias beyond 100", map[string]any{"logit_bias": map[string]any{"5": 101}}, "logit_bias.5"},
		{"bias not an object", map[string]any{"logit_bias": []int{5}}, "logit_bias"},
		{"presence beyond 2", map[string]any{"presence_penalty": 2.5}, "presence_penalty"},
		{"frequency not a number", map[string]any{"frequency_penalty": "high"}, "frequency_penalty"},
		{"suffix", map[string]any{"suffix": " end."}, "suffix"},
		{"best_of above 1", map[string]any{"best_of": 3}, "best_of"},
		{"unknown field", map[string]any{"top_a": 0.5}, "top_a"},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := map[string]any{"prompt": "Hello", "max_tokens": 2}
			for k, v := range c.extra {
				body[k] = v
			}
			e := ts.call(t, "POST", "/v1/completions", body, http.StatusBadRequest)
			require.Equal(t, c.param, e["error"].(map[string]any)["param"])
		})
	}
	for _, neutral := range []map[string]any{{"suffix": ""}, {"suffix": nil}, {"best_of": 1}, {"user": "u-1"}} {
		body := map[string]any{"prompt": "Hello", "max_tokens": 2}
		for k, v := range neutral {
			body[k] = v
		}
		ts.call(t, "POST", "/v1/completions", body, http.StatusOK)
	}
	lenient.call(t, "POST", "/v1/completions", map[string]any{"prompt": "Hello", "max_tokens": 2, "top_a": 0.5}, http.StatusOK)
	lenient.call(t, "POST", "/v1/completions", map[string]any{"prompt": "Hello", "max_tokens": 2, "suffix": "x"}, http.StatusBadRequest)
}
