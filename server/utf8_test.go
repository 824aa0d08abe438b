package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/server"
)

// TestInvalidUTF8IsRefused: text that is not valid Unicode (bytes that are
// not UTF-8, a \u escape of a lone surrogate) is a 400 naming the field,
// constraint utf8, on every route that reads a body, instead of becoming
// U+FFFD and being continued or scored as text the client never sent.
func TestInvalidUTF8IsRefused(t *testing.T) {
	ts := start(t, server.Config{})
	tests := []struct {
		path, body string
		field      string
		worker     bool // {"errors":[...]} rather than OpenAI's error object
	}{
		{"/execute", `{"job_id":"u","prompt":"Hello ` + "\xff" + ` world","max_tokens":2}`, "prompt", true},
		{"/execute", `{"job_id":"u","prompt":"Hi","max_tokens":2,"stop":["ok","` + "\xc3" + `("]}`, "stop[1]", true},
		{"/execute", `{"job_id":"u","prompt":"Hi \udc80","max_tokens":2}`, "prompt", true},
		{"/cancel", `{"job_id":"` + "\xfe" + `"}`, "job_id", true},
		{"/generate", `{"prompts":["fine","bad ` + "\xe2\x82" + `"],"max_tokens":2}`, "prompts[1]", true},
		{"/loglikelihood", `{"prompts":["The capital of France is"],"continuations":[" Par` + "\xff" + `is"]}`, "continuations[0]", true},
		{"/v1/completions", `{"prompt":"` + "\xff" + `","max_tokens":2}`, "prompt", false},
		{"/v1/completions", `{"prompt":"Hi","max_tokens":2,"user":"\ud800 alone"}`, "user", false},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"ok"},{"role":"user","content":"caf` + "\xe9" + `"}],"max_tokens":2}`, "messages[1].content", false},
		{"/v1/embeddings", `{"input":["a","b` + "\x80" + `"]}`, "input[1]", false},
		{"/tokenize", `{"prompt":"` + "\xf0\x9f\x98" + `"}`, "prompt", false},
		{"/detokenize", `{"tokens":[1],"model":"` + "\xff" + `"}`, "model", false},
		{"/v1/completions", `{"prompt":"Hi","max_tokens":2,"` + "\xff" + `":1}`, "body", false},
	}
	for _, tc := range tests {
		t.Run(tc.path+" "+tc.field, func(t *testing.T) {
			out := ts.call(t, "POST", tc.path, []byte(tc.body), http.StatusBadRequest)
			if tc.worker {
				errs := out["errors"].([]any)
				require.Len(t, errs, 1, "%v", out)
				e := errs[0].(map[string]any)
				require.Equal(t, tc.field, e["field"])
				require.Equal(t, "utf8", e["constraint"])
				require.Contains(t, e["message"], "must be valid UTF-8")
				return
			}
			e := out["error"].(map[string]any)
			require.Equal(t, tc.field, e["param"], "%v", out)
			require.Equal(t, "INVALID_REQUEST", e["code"])
			require.Contains(t, e["message"], tc.field+": must be valid UTF-8")
		})
	}
}

// TestValidUnicodeEscapesAccepted: what is valid text passes, whatever its
// spelling: a surrogate pair, U+FFFD itself, an escaped backslash before
// "ud800", raw multi-byte UTF-8.
func TestValidUnicodeEscapesAccepted(t *testing.T) {
	ts := start(t, server.Config{})
	for _, prompt := range []string{`\ud83d\ude00 smile`, `\ufffd`, `\\ud800`, "caf\u00e9 \U0001F600", `\uD83D\uDE00`} {
		t.Run(prompt, func(t *testing.T) {
			ts.call(t, "POST", "/tokenize", []byte(`{"prompt":"`+prompt+`"}`), http.StatusOK)
		})
	}
}
