package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture/tiny"
	"github.com/llorch/llorch-check/server"
)

type testServer struct {
	*server.Server
	URL    string
	client *http.Client
	ts     *httptest.Server
}

// start serves the tiny model on a loopback port, as production does.
func start(t *testing.T, cfg server.Config) *testServer {
	t.Helper()
	m, tok, _ := tiny.Load(t)
	srv := server.New(cfg)
	require.NoError(t, srv.SetModel(m, tok))
	return serve(t, srv)
}

func serve(t *testing.T, srv *server.Server) *testServer {
	t.Helper()
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	client := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(client.CloseIdleConnections)
	return &testServer{Server: srv, URL: ts.URL, client: client, ts: ts}
}

// do sends body (any value, marshalled to JSON) and returns the response.
func (s *testServer) do(t *testing.T, method, path string, body any, header ...string) *http.Response {
	t.Helper()
	return s.doCtx(t, context.Background(), method, path, body, header...)
}

func (s *testServer) doCtx(t *testing.T, ctx context.Context, method, path string, body any, header ...string) *http.Response {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, ok := body.([]byte)
		if !ok {
			var err error
			b, err = json.Marshal(body)
			require.NoError(t, err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.URL+path, r)
	require.NoError(t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := s.client.Do(req)
	require.NoError(t, err)
	return resp
}

// call sends a request and decodes a JSON answer, checking the status.
func (s *testServer) call(t *testing.T, method, path string, body any, wantStatus int) map[string]any {
	t.Helper()
	status, out := s.callAny(t, method, path, body)
	require.Equal(t, wantStatus, status, "body: %v", out)
	return out
}

// callAny is call for a test that accepts more than one status: the
// status and the JSON object answered.
func (s *testServer) callAny(t *testing.T, method, path string, body any) (int, map[string]any) {
	t.Helper()
	resp := s.do(t, method, path, body)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(b, &out), "status %d, body: %s", resp.StatusCode, b)
	return resp.StatusCode, out
}

// stream is an open /execute response.
type stream struct {
	resp *http.Response
	sse  *sseReader
}

func (s *testServer) execute(t *testing.T, ctx context.Context, body map[string]any) *stream {
	t.Helper()
	resp := s.doCtx(t, ctx, http.MethodPost, "/execute", body)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("/execute: status %d: %s", resp.StatusCode, b)
	}
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	require.Equal(t, "no", resp.Header.Get("X-Accel-Buffering"))
	t.Cleanup(func() { resp.Body.Close() })
	return &stream{resp: resp, sse: newSSEReader(resp.Body)}
}

// next reads one event and checks that data holds its type.
func (st *stream) next(t *testing.T) (string, map[string]any) {
	t.Helper()
	ev, err := st.sse.Next()
	require.NoError(t, err)
	var data map[string]any
	require.NoError(t, json.Unmarshal([]byte(ev.Data), &data), "event %s data %q", ev.Name, ev.Data)
	require.Equal(t, ev.Name, data["type"], "event line and data type disagree")
	return ev.Name, data
}

// run reads a whole stream and checks docs/api.md's grammar: started, token*,
// exactly one terminal event, then the end of the stream.
func (st *stream) run(t *testing.T) (started map[string]any, tokens []map[string]any, terminal string, last map[string]any) {
	t.Helper()
	name, started := st.next(t)
	require.Equal(t, "started", name)
	for {
		name, data := st.next(t)
		switch name {
		case "token":
			require.EqualValues(t, len(tokens), data["i"], "token indices count up from 0")
			tokens = append(tokens, data)
			continue
		case "end", "error":
		default:
			t.Fatalf("unexpected event %q", name)
		}
		_, err := st.sse.Next()
		require.ErrorIs(t, err, io.EOF, "nothing may follow the terminal event")
		return started, tokens, name, data
	}
}

func tokenText(tokens []map[string]any) string {
	s := ""
	for _, tk := range tokens {
		s += tk["t"].(string)
	}
	return s
}

// checkNoLeak compares goroutine counts around a test body, letting
// connection goroutines wind down first.
func checkNoLeak(t *testing.T, ts *testServer) func() {
	t.Helper()
	ts.client.CloseIdleConnections()
	before := settledGoroutines(-1)
	return func() {
		t.Helper()
		ts.client.CloseIdleConnections()
		after := settledGoroutines(before)
		require.LessOrEqual(t, after, before, "goroutines leaked: %d before, %d after", before, after)
	}
}

// settledGoroutines waits (up to 5 s) for the count to reach target, or to
// stop changing when target is -1.
func settledGoroutines(target int) int {
	n := runtime.NumGoroutine()
	for i := 0; i < 250; i++ {
		time.Sleep(20 * time.Millisecond)
		m := runtime.NumGoroutine()
		if (target >= 0 && m <= target) || (target < 0 && m == n && i > 5) {
			return m
		}
		n = m
	}
	return n
}
