package server_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture/tiny"
	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/server"
)

func TestAuth(t *testing.T) {
	ts := start(t, server.Config{APIKey: "s3cret", CORSOrigins: []string{"https://app.example"}})
	gen := map[string]any{"prompts": []string{"Hi"}, "max_tokens": 2}
	for _, hdr := range [][]string{nil, {"Authorization", "Bearer wrong"}, {"Authorization", "s3cret"}} {
		resp := ts.do(t, "POST", "/generate", gen, hdr...)
		resp.Body.Close()
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "%v", hdr)
		require.NotEmpty(t, resp.Header.Get("WWW-Authenticate"))
	}
	resp := ts.do(t, "POST", "/generate", gen, "Authorization", "Bearer s3cret")
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	for _, path := range []string{"/v1/models", "/metrics"} {
		resp := ts.do(t, "GET", path, nil)
		resp.Body.Close()
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, path)
	}
	for _, path := range []string{"/health", "/healthz", "/readyz", "/"} {
		resp := ts.do(t, "GET", path, nil)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
	}
	// CORS preflight is open and names what may follow.
	resp = ts.do(t, "OPTIONS", "/execute", nil, "Origin", "https://app.example", "Access-Control-Request-Method", "POST",
		"Access-Control-Request-Headers", "authorization, content-type")
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	require.Equal(t, "https://app.example", resp.Header.Get("Access-Control-Allow-Origin"))
	require.Contains(t, resp.Header.Get("Access-Control-Allow-Headers"), "Authorization")
	// The OpenAI JS SDK's own headers are granted as the browser names them.
	resp = ts.do(t, "OPTIONS", "/v1/completions", nil, "Origin", "https://app.example", "Access-Control-Request-Method", "POST",
		"Access-Control-Request-Headers", "authorization, content-type, x-stainless-arch, x-stainless-lang")
	resp.Body.Close()
	require.Contains(t, resp.Header.Get("Access-Control-Allow-Headers"), "x-stainless-arch, x-stainless-lang")
	// An origin not on the list gets no CORS grant.
	resp = ts.do(t, "OPTIONS", "/execute", nil, "Origin", "https://evil.example", "Access-Control-Request-Method", "POST")
	resp.Body.Close()
	require.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"))
}

func TestAPIKeyFromConfigOnly(t *testing.T) {
	ts := start(t, server.Config{})
	resp := ts.do(t, "GET", "/v1/models", nil)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "no key configured: no auth")
}

func TestRequestID(t *testing.T) {
	ts := start(t, server.Config{})
	resp := ts.do(t, "GET", "/healthz", nil, "X-Request-ID", "abc-123")
	resp.Body.Close()
	require.Equal(t, "abc-123", resp.Header.Get("X-Request-ID"))
	resp = ts.do(t, "GET", "/healthz", nil)
	resp.Body.Close()
	require.Len(t, resp.Header.Get("X-Request-ID"), 24)
}

func TestMetrics(t *testing.T) {
	ts := start(t, server.Config{})
	ts.call(t, "POST", "/generate", map[string]any{"prompts": []string{"Hi"}, "max_tokens": 3, "temperature": 0}, http.StatusOK)
	ts.call(t, "POST", "/generate", map[string]any{"prompts": []string{""}}, http.StatusBadRequest)
	resp := ts.do(t, "GET", "/metrics", nil)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	text := string(b)
	for _, want := range []string{
		`llorch_requests_total{method="POST",outcome="ok",route="/generate"} 1`,
		`llorch_requests_total{method="POST",outcome="client_error",route="/generate"} 1`,
		`llorch_generated_tokens_total{model_name="tiny-gpt2"} 3`,
		`llorch_prompt_tokens_total{model_name="tiny-gpt2"} 1`,
		`llorch_time_to_first_token_seconds_count{model_name="tiny-gpt2"} 1`,
		`llorch_inter_token_latency_seconds_count{model_name="tiny-gpt2"} 2`,
		`llorch_request_duration_seconds_bucket{method="POST",route="/generate"`,
		`llorch_queue_depth{model_name="tiny-gpt2"} 0`,
		`llorch_running_requests{model_name="tiny-gpt2"} 0`,
		`llorch_model_memory_bytes`,
		`llorch_build_info{`,
		`process_resident_memory_bytes`,
	} {
		require.Contains(t, text, want)
	}
}

func TestPage(t *testing.T) {
	ts := start(t, server.Config{})
	resp := ts.do(t, "GET", "/", nil)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Content-Type"), "text/html")
	require.Contains(t, string(b), "/execute")
	require.Contains(t, string(b), "/loglikelihood")
	// The chat view: its log, its script's request and the tooltip the
	// per-token log-probabilities show in.
	for _, want := range []string{`id="chat_log"`, `fetch("/v1/chat/completions"`, "top_logprobs", `id="tip"`} {
		require.Contains(t, string(b), want)
	}
	// The scripts are inlined: the CSP allows no script from a URL.
	require.NotContains(t, string(b), "<script src=")
	resp2 := ts.do(t, "GET", "/nope", nil)
	resp2.Body.Close()
	require.Equal(t, http.StatusNotFound, resp2.StatusCode)
}

// TestBackpressure: with one slot and one queue place, a burst gets 429s
// with Retry-After, and every admitted request completes.
func TestBackpressure(t *testing.T) {
	ts := start(t, server.Config{Parallel: 1, MaxQueue: 1, TokenDelay: 20 * time.Millisecond})
	// A stream holds the only slot until it is cancelled, so what happens
	// to the burst does not depend on timing.
	holder := holdSlot(t, ts)

	const burst = 6
	type result struct {
		status     int
		retryAfter string
		body       string
	}
	results := make(chan result, burst)
	var wg sync.WaitGroup
	for range burst {
		wg.Go(func() {
			resp := ts.do(t, "POST", "/generate", map[string]any{"prompts": []string{"Hello"}, "max_tokens": 4})
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			results <- result{resp.StatusCode, resp.Header.Get("Retry-After"), string(b)}
		})
	}
	// All but the queued one are refused while the holder runs.
	for range burst - 1 {
		r := <-results
		require.Equal(t, http.StatusTooManyRequests, r.status, r.body)
		require.Equal(t, "1", r.retryAfter)
		require.Contains(t, r.body, "QUEUE_FULL")
	}
	h := ts.call(t, "GET", "/health", nil, http.StatusOK)
	require.EqualValues(t, 1, h["running"])
	require.EqualValues(t, 1, h["queued"])
	ts.call(t, "POST", "/cancel", map[string]any{"job_id": "holder"}, http.StatusAccepted)
	r := <-results
	require.Equal(t, http.StatusOK, r.status, r.body)
	wg.Wait()
	_, _, terminal, data := holder.run2(t)
	require.Equal(t, "error", terminal)
	require.Equal(t, "CANCELLED", data["code"])
}

// run2 reads the rest of a stream that has already started.
func (st *stream) run2(t *testing.T) (int, []map[string]any, string, map[string]any) {
	t.Helper()
	var tokens []map[string]any
	for {
		name, data := st.next(t)
		if name == "token" {
			tokens = append(tokens, data)
			continue
		}
		_, err := st.sse.Next()
		require.ErrorIs(t, err, io.EOF)
		return len(tokens), tokens, name, data
	}
}

func TestStartupValidation(t *testing.T) {
	_, _, set := tiny.Load(t)
	t.Run("passes", func(t *testing.T) {
		m, tok, _ := tiny.Load(t)
		srv := server.New(server.Config{})
		require.NoError(t, srv.SetModel(m, tok))
		ts := serve(t, srv)
		require.True(t, srv.Validate(context.Background(), set))
		require.Equal(t, "ready", ts.call(t, "GET", "/readyz", nil, http.StatusOK)["status"])
		v := ts.call(t, "GET", "/health", nil, http.StatusOK)["validation"].(map[string]any)
		require.Equal(t, "passed", v["status"])
		require.Equal(t, "tiny-gpt2", v["references"], "the set's name, not its server-side path")
		require.Equal(t, v["total"], v["passed"])
		require.Greater(t, v["total"].(float64), 0.0)
		require.Contains(t, v, "duration_seconds")
	})
	t.Run("fails", func(t *testing.T) {
		// A model of its own: the fault must not reach the shared one.
		m, tok := tiny.Fresh(t)
		m.InjectFault(model.FaultErfGELU, -1)
		srv := server.New(server.Config{})
		require.NoError(t, srv.SetModel(m, tok))
		ts := serve(t, srv)
		require.False(t, srv.Validate(context.Background(), set))
		require.Equal(t, "validation_failed", ts.call(t, "GET", "/readyz", nil, http.StatusServiceUnavailable)["status"])
		h := ts.call(t, "GET", "/health", nil, http.StatusServiceUnavailable)
		require.Equal(t, "unhealthy", h["status"])
		v := h["validation"].(map[string]any)
		require.Equal(t, "failed", v["status"])
		require.Less(t, v["passed"].(float64), v["total"].(float64))
		require.True(t, strings.Contains(v["first_failure"].(string), "FFN") || v["first_failure"] != "")
		e := ts.call(t, "POST", "/generate", map[string]any{"prompts": []string{"Hi"}}, http.StatusServiceUnavailable)
		require.Equal(t, "NOT_READY", e["error"].(map[string]any)["code"])
	})
}

func TestDrainRefusesNewWork(t *testing.T) {
	ts := start(t, server.Config{TokenDelay: 10 * time.Millisecond})
	st := ts.execute(t, context.Background(), map[string]any{"job_id": "d", "prompt": "Hi", "max_tokens": 20})
	name, _ := st.next(t)
	require.Equal(t, "started", name)
	done := make(chan error, 1)
	go func() { done <- ts.Drain(context.Background()) }()
	require.Eventually(t, func() bool {
		resp := ts.do(t, "GET", "/readyz", nil)
		resp.Body.Close()
		return resp.StatusCode == http.StatusServiceUnavailable
	}, 5*time.Second, 5*time.Millisecond)
	e := ts.call(t, "POST", "/generate", map[string]any{"prompts": []string{"Hi"}}, http.StatusServiceUnavailable)
	require.Equal(t, "DRAINING", e["error"].(map[string]any)["code"])
	h := ts.call(t, "GET", "/health", nil, http.StatusServiceUnavailable)
	require.Equal(t, "draining", h["status"], "an orchestrator routing on /health stops sending work")
	n, _, terminal, end := st.run2(t)
	require.Equal(t, "end", terminal, "the stream in flight finishes")
	require.Equal(t, 20, n)
	require.Equal(t, "max_tokens", end["stop_reason"])
	require.NoError(t, <-done)
}

// TestLogsWithoutPrompt: access logs are JSON with the request id and never
// the prompt text.
func TestLogsWithoutPrompt(t *testing.T) {
	var buf syncBuf
	m, tok, _ := tiny.Load(t)
	srv := server.New(server.Config{Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
	require.NoError(t, srv.SetModel(m, tok))
	ts := serve(t, srv)
	const secret = "my very private prompt"
	resp := ts.do(t, "POST", "/generate", map[string]any{"prompts": []string{secret}, "max_tokens": 2}, "X-Request-ID", "rid-1")
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	logs := buf.String()
	require.NotContains(t, logs, "private")
	require.Contains(t, logs, `"request_id":"rid-1"`)
	for line := range strings.SplitSeq(strings.TrimSpace(logs), "\n") {
		require.True(t, json.Valid([]byte(line)), "not JSON: %s", line)
	}
}

type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestHealthKeepsServerDetailsBehindTheKey: the open /health names the
// reference set but not its path, and never an internal error's text;
// a caller with the API key sees them.
func TestHealthKeepsServerDetailsBehindTheKey(t *testing.T) {
	m, tok, set := tiny.Load(t)
	srv := server.New(server.Config{APIKey: "k"})
	require.NoError(t, srv.SetModel(m, tok))
	ts := serve(t, srv)
	require.True(t, srv.Validate(context.Background(), set))
	open := ts.call(t, "GET", "/health", nil, http.StatusOK)["validation"].(map[string]any)
	require.Equal(t, filepath.Base(set.Dir), open["references"])
	resp := ts.do(t, "GET", "/health", nil, "Authorization", "bearer k") // RFC 7235: any case
	defer resp.Body.Close()
	var h map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&h))
	require.Equal(t, set.Dir, h["validation"].(map[string]any)["references"])
}

// TestMissesAnswerJSON: an unknown path or a wrong method gets the API's
// JSON error (type, code), not ServeMux's plain text, which OpenAI's SDKs
// show as "404 404 page not found".
func TestMissesAnswerJSON(t *testing.T) {
	ts := start(t, server.Config{})
	e := ts.call(t, "GET", "/v1/chat/unknown", nil, http.StatusNotFound)["error"].(map[string]any)
	require.Equal(t, "NOT_FOUND", e["code"])
	require.NotEmpty(t, e["type"])
	resp := ts.do(t, "GET", "/v1/completions", nil)
	defer resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	require.Equal(t, "POST", resp.Header.Get("Allow"))
	var body map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	require.Equal(t, "METHOD_NOT_ALLOWED", body["error"].(map[string]any)["code"])
}
