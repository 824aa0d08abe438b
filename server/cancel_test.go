package server_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/server"
)

// cancelBound is docs/api.md's 100 ms from /cancel to the stream's error event,
// scaled by slack under the race detector.
const cancelBound = 100 * time.Millisecond * slack

// oneSlot is a server whose single slot proves, by the next request not
// getting 429, that a finished job freed it.
func oneSlot(t *testing.T, cfg server.Config) *testServer {
	cfg.Parallel, cfg.MaxQueue = 1, 0
	if cfg.TokenDelay == 0 {
		cfg.TokenDelay = 20 * time.Millisecond
	}
	return start(t, cfg)
}

// slotIsFree waits until nothing runs, then checks that a request is
// admitted.
func slotIsFree(t *testing.T, ts *testServer) {
	t.Helper()
	require.Eventually(t, func() bool {
		h := ts.call(t, "GET", "/health", nil, http.StatusOK)
		return h["running"].(float64) == 0
	}, 5*time.Second, 5*time.Millisecond)
	ts.call(t, "POST", "/generate", map[string]any{"prompts": []string{"Hi"}, "max_tokens": 1}, http.StatusOK)
}

func TestCancelEndpoint(t *testing.T) {
	ts := oneSlot(t, server.Config{})
	leak := checkNoLeak(t, ts)
	st := ts.execute(t, context.Background(), map[string]any{"job_id": "c1", "prompt": "Hi", "max_tokens": 100})
	name, _ := st.next(t)
	require.Equal(t, "started", name)
	name, _ = st.next(t)
	require.Equal(t, "token", name, "a token arrives before the stream ends: nothing is buffered")

	sent := time.Now()
	ts.call(t, "POST", "/cancel", map[string]any{"job_id": "c1"}, http.StatusAccepted)
	_, _, terminal, data := st.run2(t)
	latency := time.Since(sent)
	require.Equal(t, "error", terminal)
	require.Equal(t, "CANCELLED", data["code"])
	require.Less(t, latency, cancelBound, "docs/api.md: the stream ends within 100 ms of /cancel")

	// Idempotent: again, and for a job that never existed.
	require.Equal(t, false, ts.call(t, "POST", "/cancel", map[string]any{"job_id": "c1"}, http.StatusAccepted)["running"])
	ts.call(t, "POST", "/cancel", map[string]any{"job_id": "never"}, http.StatusAccepted)
	slotIsFree(t, ts)
	st.resp.Body.Close()
	leak()
}

func TestCancelWhileQueued(t *testing.T) {
	ts := start(t, server.Config{Parallel: 1, MaxQueue: 1, TokenDelay: 20 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	holder := ts.execute(t, ctx, map[string]any{"job_id": "holder", "prompt": "Hi", "max_tokens": 100})
	name, _ := holder.next(t)
	require.Equal(t, "started", name)
	queued := make(chan *stream, 1)
	go func() {
		queued <- ts.execute(t, context.Background(), map[string]any{"job_id": "queued", "prompt": "Hi", "max_tokens": 5})
	}()
	require.Eventually(t, func() bool {
		return ts.call(t, "GET", "/health", nil, http.StatusOK)["queued"].(float64) == 1
	}, 5*time.Second, 5*time.Millisecond)
	c := ts.call(t, "POST", "/cancel", map[string]any{"job_id": "queued"}, http.StatusAccepted)
	require.Equal(t, false, c["running"], "a queued job was not running")
	require.Equal(t, true, c["queued"])
	st := <-queued
	name, data := st.next(t)
	require.Equal(t, "error", name)
	require.Equal(t, "CANCELLED", data["code"])
	require.Equal(t, 0.0, ts.call(t, "GET", "/health", nil, http.StatusOK)["queued"])
	c = ts.call(t, "POST", "/cancel", map[string]any{"job_id": "holder"}, http.StatusAccepted)
	require.Equal(t, true, c["running"])
}

// TestCancelBeforeExecute: a /cancel that overtakes its /execute (the job
// id not yet known) still wins: the job starts cancelled, and no token is
// generated.
func TestCancelBeforeExecute(t *testing.T) {
	ts := oneSlot(t, server.Config{})
	c := ts.call(t, "POST", "/cancel", map[string]any{"job_id": "early"}, http.StatusAccepted)
	require.Equal(t, false, c["running"])
	require.Equal(t, false, c["queued"])
	st := ts.execute(t, context.Background(), map[string]any{"job_id": "early", "prompt": "Hi", "max_tokens": 10})
	name, data := st.next(t)
	require.Equal(t, "error", name)
	require.Equal(t, "CANCELLED", data["code"])
	st.resp.Body.Close()
	// Used once: the same id runs normally next time.
	_, tokens, terminal, _ := ts.execute(t, context.Background(), map[string]any{"job_id": "early", "prompt": "Hi", "max_tokens": 3}).run(t)
	require.Equal(t, "end", terminal)
	require.Len(t, tokens, 3)
}

func TestClientDisconnectFreesSlot(t *testing.T) {
	ts := oneSlot(t, server.Config{})
	leak := checkNoLeak(t, ts)
	ctx, cancel := context.WithCancel(context.Background())
	st := ts.execute(t, ctx, map[string]any{"job_id": "gone", "prompt": "Hi", "max_tokens": 100})
	name, _ := st.next(t)
	require.Equal(t, "started", name)
	name, _ = st.next(t)
	require.Equal(t, "token", name)
	cancel() // the client goes away mid-stream
	st.resp.Body.Close()
	slotIsFree(t, ts)
	leak()
}

func TestRequestTimeout(t *testing.T) {
	ts := oneSlot(t, server.Config{RequestTimeout: 150 * time.Millisecond})
	leak := checkNoLeak(t, ts)
	st := ts.execute(t, context.Background(), map[string]any{"job_id": "slow", "prompt": "Hi", "max_tokens": 100})
	_, tokens, terminal, data := st.run(t)
	require.Equal(t, "error", terminal)
	require.Equal(t, "TIMEOUT", data["code"])
	require.Less(t, len(tokens), 100)
	e := ts.call(t, "POST", "/generate", map[string]any{"prompts": []string{"Hi"}, "max_tokens": 100}, http.StatusGatewayTimeout)
	require.Equal(t, "TIMEOUT", e["error"].(map[string]any)["code"])
	st.resp.Body.Close()
	require.Eventually(t, func() bool {
		return ts.call(t, "GET", "/health", nil, http.StatusOK)["running"].(float64) == 0
	}, 5*time.Second, 5*time.Millisecond)
	resp := ts.do(t, "POST", "/generate", map[string]any{"prompts": []string{"Hi"}, "max_tokens": 1})
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	leak()
}
