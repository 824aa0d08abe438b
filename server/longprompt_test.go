package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/server"
)

// TestLongPromptNotTokenized: a prompt beyond 32,768 characters is refused
// before the tokenizer sees it (issue 43 item 2): tokenizing the issue's
// 1.04 MB prompt cost a second of CPU and ~60 MB per request, and 64 of
// them at once took the server to 2 GB before each got its 400.
func TestLongPromptNotTokenized(t *testing.T) {
	ts := start(t, server.Config{})
	long := strings.Repeat("a", 1_040_000)
	msgs := []map[string]any{{"role": "user", "content": long}}
	for _, c := range []struct {
		route string
		body  map[string]any
		param string
	}{
		{"/v1/completions", map[string]any{"prompt": long, "max_tokens": 1}, "prompt"},
		{"/v1/completions", map[string]any{"prompt": []string{"Hi", long}, "max_tokens": 1}, "prompt[1]"},
		{"/v1/chat/completions", map[string]any{"messages": msgs, "max_tokens": 1}, "messages"},
		{"/v1/responses", map[string]any{"input": long, "max_output_tokens": 16}, "input"},
	} {
		before := server.TokenizedBytes()
		e := ts.call(t, "POST", c.route, c.body, http.StatusBadRequest)
		tokenized := server.TokenizedBytes() - before
		er := e["error"].(map[string]any)
		require.Equal(t, c.param, er["param"], c.route)
		assert.Contains(t, er["message"], "at most 32768", c.route)
		// Other tests may tokenize their short prompts meanwhile.
		assert.Less(t, tokenized, int64(len(long)), "%s %s tokenized before its refusal", c.route, c.param)
	}
}
