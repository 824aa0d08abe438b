package server_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/server"
)

// readCounter is a request body that counts the bytes read from it.
type readCounter struct {
	r    *strings.Reader
	read int
}

func (c *readCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.read += n
	return n, err
}

func (c *readCounter) Close() error { return nil }

// TestShedBeforeBody (issue #43 row 8): with every slot busy and the
// queue full, each route that takes a slot answers 429 QUEUE_FULL with
// Retry-After before it reads a byte of its body, so a client that
// ignores Retry-After costs no decoding or tokenizing; the refusal is
// counted as before. A route that takes no slot (/tokenize) still answers.
func TestShedBeforeBody(t *testing.T) {
	ts := start(t, server.Config{Parallel: 1, MaxQueue: 0, TokenDelay: 20 * time.Millisecond})
	holder := holdSlot(t, ts)
	prompt := `"prompt":"` + strings.Repeat("Tell me about the library. ", 4) + `"`
	cases := []struct{ path, body string }{
		{"/execute", `{"job_id":"j",` + prompt + `}`},
		{"/generate", `{"prompts":["Hello"]}`},
		{"/loglikelihood", `{"prompts":["The"],"continuations":[" cat"]}`},
		{"/v1/completions", `{` + prompt + `}`},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"Hello"}]}`},
		{"/v1/responses", `{"input":"Hello"}`},
		{"/v1/embeddings", `{"input":"Hello"}`},
	}
	tokenized := server.TokenizedBytes()
	for _, c := range cases {
		body := &readCounter{r: strings.NewReader(c.body)}
		req := httptest.NewRequest(http.MethodPost, c.path, body)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		ts.Handler().ServeHTTP(rec, req)
		require.Equal(t, http.StatusTooManyRequests, rec.Code, "%s: %s", c.path, rec.Body)
		require.Equal(t, "1", rec.Header().Get("Retry-After"), c.path)
		require.Equal(t, "application/json", rec.Header().Get("Content-Type"), c.path)
		require.NotEmpty(t, rec.Header().Get("X-Request-ID"), c.path)
		require.JSONEq(t, `{"error":{"message":"all slots are busy and the queue is full; retry later","type":"rate_limit_error","param":null,"code":"QUEUE_FULL"}}`,
			rec.Body.String(), c.path)
		require.Zero(t, body.read, "%s: the body was read", c.path)
	}
	require.Equal(t, tokenized, server.TokenizedBytes(), "nothing tokenized")
	text := scrape(t, ts)
	require.Contains(t, text, "\nllorch_rejected_requests_total 7\n")
	require.Contains(t, text, `llorch_requests_total{method="POST",outcome="rejected",route="/v1/chat/completions"} 1`+"\n")

	ts.call(t, "POST", "/tokenize", map[string]any{"prompt": "Hello"}, http.StatusOK)
	ts.call(t, "POST", "/cancel", map[string]any{"job_id": "holder"}, http.StatusAccepted)
	holder.run2(t)
}
