package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestContextLengthNamesTheField: a request whose one prompt fits the
// context but whose max_tokens (under whichever name the client sent it)
// does not is refused under that name, the field to change, on GPT-2 and
// every Llama-family tiny model; a prompt that fills the context by
// itself, or one of several, is refused under the prompt's own name.
func TestContextLengthNamesTheField(t *testing.T) {
	short := []map[string]string{{"role": "user", "content": "Hi"}}
	for _, s := range everyModel(t) {
		n := s.m.Config.NPositions
		long := strings.Repeat(" word", n+1) // more tokens than the context on every tokenizer
		for _, c := range []struct {
			name, path, field string
			body              map[string]any
		}{
			{"chat max_tokens", "/v1/chat/completions", "max_tokens", map[string]any{"messages": short, "max_tokens": n}},
			{"chat max_completion_tokens", "/v1/chat/completions", "max_completion_tokens", map[string]any{"messages": short, "max_completion_tokens": n}},
			{"chat, a long conversation", "/v1/chat/completions", "messages",
				map[string]any{"messages": []map[string]string{{"role": "user", "content": long}}, "max_tokens": 1}},
			{"responses max_output_tokens", "/v1/responses", "max_output_tokens", map[string]any{"input": "Hi", "max_output_tokens": n}},
			{"responses, a long input", "/v1/responses", "input", map[string]any{"input": long, "max_output_tokens": 16}},
			{"completions max_tokens", "/v1/completions", "max_tokens", map[string]any{"prompt": "Hi", "max_tokens": n}},
			{"completions, a long prompt", "/v1/completions", "prompt", map[string]any{"prompt": long, "max_tokens": 1}},
			{"completions, one of two prompts", "/v1/completions", "prompt[0]", map[string]any{"prompt": []string{"Hi", "Hi"}, "max_tokens": n}},
		} {
			t.Run(s.name+"/"+c.name, func(t *testing.T) {
				e := s.ts.call(t, "POST", c.path, c.body, http.StatusBadRequest)["error"].(map[string]any)
				require.Equal(t, c.field, e["param"], e["message"])
				require.Contains(t, e["message"], "context length")
			})
		}
	}
}
