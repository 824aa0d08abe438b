package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/server"
)

// TestChatTemplateSandbox: a template that recurses without end, builds a
// huge range or prints a huge string is refused at start-up naming its
// file, or fails only the request that triggers it with a 400 naming the
// limit while the server goes on serving (issue 43 item 1). Without the
// sandbox the recursive macro kills the test process with a fatal stack
// overflow.
func TestChatTemplateSandbox(t *testing.T) {
	const rec = `{% macro f(n) %}{% if n < (messages[-1]['content']|length) * 1000 %}{{ f(n+1) }}{% endif %}{% endmacro %}{{ f(0) }}{{ messages[-1]['content'] }}`
	for _, src := range []string{rec, `{% for i in range(10**9) %}{% endfor %}`, `{{ 'x' * 100000000 }}`} {
		_, err := server.JinjaChatTemplate("evil.jinja", src, nil)
		require.Error(t, err, src)
		assert.Contains(t, err.Error(), "evil.jinja", src)
		assert.Contains(t, err.Error(), "sandbox", src)
	}

	// Harmless on the start-up check's short message, hostile on a long one.
	const onLong = `{% set n = messages[-1]['content']|length %}{% if n > 100 %}{% macro f(i) %}{% if i < n * 1000 %}{{ f(i+1) }}{% endif %}{% endmacro %}{{ f(0) }}{% for i in range(n * 1000) %}{% endfor %}{% endif %}{% for m in messages %}{{ m.content }}{% endfor %}`
	tmpl, err := server.JinjaChatTemplate("on-long.jinja", onLong, nil)
	require.NoError(t, err)
	ts := start(t, server.Config{ChatTemplate: tmpl})
	long := []map[string]any{{"role": "user", "content": strings.Repeat("a", 3000)}}
	e := ts.call(t, "POST", "/v1/chat/completions", map[string]any{"messages": long, "max_tokens": 1}, http.StatusBadRequest)
	assert.Contains(t, e["error"].(map[string]any)["message"], "recursion too deep")
	ts.call(t, "POST", "/v1/chat/completions", map[string]any{"messages": chatMessages, "max_tokens": 1}, http.StatusOK)
}
