package server_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture/tiny"
	"github.com/llorch/llorch-check/server"
)

// TestHeadErrorsBeforeShed (issue #43): with every slot busy and the queue
// full, a request its head alone shows to be wrong (unknown route, wrong
// method, no key, wrong Content-Type, a Content-Length over the limit or
// of 0) still gets its 4xx, not the 429 that would have it retried as it
// is; what only the body shows (malformed JSON, a bad field) gets the
// 429, unread. docs/api.md, "Order of checks".
func TestHeadErrorsBeforeShed(t *testing.T) {
	m, tok, _ := tiny.Load(t)
	srv := server.New(server.Config{Parallel: 1, MaxQueue: 0, TokenDelay: 20 * time.Millisecond, APIKey: "k", MaxBodyBytes: 1 << 10})
	require.NoError(t, srv.SetModel(m, tok))
	ts := serve(t, srv)
	auth := []string{"Authorization", "Bearer k"}
	resp := ts.doCtx(t, t.Context(), "POST", "/execute", map[string]any{"job_id": "holder", "prompt": "Hi", "max_tokens": 100}, auth...)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	t.Cleanup(func() { resp.Body.Close() })
	holder := &stream{resp: resp, sse: newSSEReader(resp.Body)}
	name, _ := holder.next(t)
	require.Equal(t, "started", name)

	const chat = `{"messages":[{"role":"user","content":"Hello"}]}`
	for _, c := range []struct {
		name, method, path, body, contentType, key string
		length                                     int64 // Content-Length; -1 unknown (chunked)
		status                                     int
		code                                       string
	}{
		{"unknown route", "POST", "/v1/chat/complete", chat, "application/json", "k", -1, http.StatusNotFound, "NOT_FOUND"},
		{"wrong method", "PUT", "/v1/chat/completions", chat, "application/json", "k", -1, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED"},
		{"no key", "POST", "/v1/chat/completions", chat, "application/json", "", -1, http.StatusUnauthorized, "UNAUTHORIZED"},
		{"wrong key", "POST", "/generate", `{"prompts":["Hi"]}`, "application/json", "x", -1, http.StatusUnauthorized, "UNAUTHORIZED"},
		{"no Content-Type", "POST", "/v1/chat/completions", chat, "", "k", -1, http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE"},
		{"form Content-Type", "POST", "/generate", `prompts=Hi`, "application/x-www-form-urlencoded", "k", -1, http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE"},
		{"Content-Length over the limit", "POST", "/v1/completions", chat, "application/json", "k", 2 << 10, http.StatusRequestEntityTooLarge, "BODY_TOO_LARGE"},
		{"empty body", "POST", "/v1/embeddings", "", "application/json", "k", 0, http.StatusBadRequest, "INVALID_REQUEST"},
		{"empty body, native", "POST", "/loglikelihood", "", "application/json", "k", 0, http.StatusBadRequest, ""},
		// What only the body shows waits for a slot like the rest.
		{"malformed JSON", "POST", "/v1/chat/completions", `{"messages": [`, "application/json", "k", -1, http.StatusTooManyRequests, "QUEUE_FULL"},
		{"a bad field", "POST", "/v1/completions", `{"prompt": 5}`, "application/json", "k", -1, http.StatusTooManyRequests, "QUEUE_FULL"},
		{"well formed", "POST", "/v1/chat/completions", chat, "application/json", "k", int64(len(chat)), http.StatusTooManyRequests, "QUEUE_FULL"},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := &readCounter{r: strings.NewReader(c.body)}
			req := httptest.NewRequest(c.method, c.path, body)
			req.ContentLength = c.length
			if c.contentType != "" {
				req.Header.Set("Content-Type", c.contentType)
			}
			if c.key != "" {
				req.Header.Set("Authorization", "Bearer "+c.key)
			}
			rec := httptest.NewRecorder()
			ts.Handler().ServeHTTP(rec, req)
			require.Equal(t, c.status, rec.Code, "%s", rec.Body)
			if c.code != "" {
				require.Contains(t, rec.Body.String(), `"code":"`+c.code+`"`)
			}
			require.Zero(t, body.read, "the body was read")
		})
	}
	cancel := ts.do(t, "POST", "/cancel", map[string]any{"job_id": "holder"}, auth...)
	cancel.Body.Close()
	require.Equal(t, http.StatusAccepted, cancel.StatusCode)
}
