package server_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture/tiny"
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

// TestShedHoldsHammering (issue #43 row 8): a client that asks again on
// the same connection before the Retry-After of its 429 has passed is
// held until it has, not refused in a loop; if a slot came free
// meanwhile, its request is then admitted.
func TestShedHoldsHammering(t *testing.T) {
	m, tok, _ := tiny.Load(t)
	srv := server.New(server.Config{Parallel: 1, MaxQueue: 0, TokenDelay: 20 * time.Millisecond})
	require.NoError(t, srv.SetModel(m, tok))
	ts := serve(t, srv)
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	hs := &http.Server{Handler: srv.Handler()}
	go hs.Serve(srv.LimitConnections(hs, tcp, 100))
	t.Cleanup(func() { hs.Close() })
	holder := holdSlot(t, ts)

	c, err := net.Dial("tcp", tcp.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	r := bufio.NewReader(c)
	const req = "POST /generate HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n" +
		`{"prompts":["Hello"],"max_tokens":2}    `
	_, err = io.WriteString(c, req)
	require.NoError(t, err)
	resp, err := http.ReadResponse(r, nil)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)

	// Again at once: held, not answered, until Retry-After has passed.
	_, err = io.WriteString(c, req)
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(100*time.Millisecond)))
	_, err = r.Peek(1)
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "answered while held")
	require.NoError(t, c.SetReadDeadline(time.Time{}))
	ts.call(t, "POST", "/cancel", map[string]any{"job_id": "holder"}, http.StatusAccepted)
	holder.run2(t)
	resp, err = http.ReadResponse(r, nil)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode, "admitted once the slot came free: %s", body)
}
