package server_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture/tiny"
	"github.com/llorch/llorch-check/server"
)

// scrape returns the server's /metrics text.
func scrape(t *testing.T, ts *testServer) string {
	t.Helper()
	resp := ts.do(t, "GET", "/metrics", nil)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return string(b)
}

// TestMetricsRouteLabels: a route is labelled by its method and its path
// as docs/api.md writes it, never by ServeMux's pattern syntax ({$}, {id...}).
func TestMetricsRouteLabels(t *testing.T) {
	ts := start(t, server.Config{})
	cases := []struct {
		method, path string
		status       int
		want         string
	}{
		{"GET", "/", http.StatusOK, `llorch_requests_total{method="GET",outcome="ok",route="/"} 1`},
		{"GET", "/v1/models/tiny-gpt2", http.StatusOK, `llorch_requests_total{method="GET",outcome="ok",route="/v1/models/{id}"} 1`},
		{"GET", "/v1/models/other", http.StatusNotFound, `llorch_requests_total{method="GET",outcome="client_error",route="/v1/models/{id}"} 1`},
		{"GET", "/v1/models", http.StatusOK, `llorch_requests_total{method="GET",outcome="ok",route="/v1/models"} 1`},
		{"GET", "/healthz", http.StatusOK, `llorch_request_duration_seconds_count{method="GET",route="/healthz"} 1`},
	}
	for _, c := range cases {
		resp := ts.do(t, c.method, c.path, nil)
		_, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		require.NoError(t, err, c.path)
		require.Equal(t, c.status, resp.StatusCode, c.path)
	}
	// A request is counted when its handler returns, which can be after
	// the client has read the whole response (the page's last write is
	// in the socket before the handler is done): CI once scraped before
	// GET / was counted. Scrape until every count is in, then check each.
	counted := func(text string) bool {
		for _, c := range cases {
			if !strings.Contains(text, c.want+"\n") {
				return false
			}
		}
		return true
	}
	text := scrape(t, ts)
	for deadline := time.Now().Add(10 * time.Second); !counted(text) && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
		text = scrape(t, ts)
	}
	for _, c := range cases {
		require.Contains(t, text, c.want+"\n", "%s %s", c.method, c.path)
	}
	require.NotContains(t, text, "{$}")
	require.NotContains(t, text, "...}")
	require.NotContains(t, text, `route="GET `)
}

// TestMetricsModelLabel: every metric of the model's work carries the
// served model's name as model_name, vLLM's label, and the queue and
// prefill times have vLLM's names.
func TestMetricsModelLabel(t *testing.T) {
	ts := start(t, server.Config{ModelName: "tiny"})
	ts.call(t, "POST", "/generate", map[string]any{"prompts": []string{"Hi"}, "max_tokens": 3, "temperature": 0}, http.StatusOK)
	text := scrape(t, ts)
	for _, want := range []string{
		`llorch_prompt_tokens_total{model_name="tiny"} 1`,
		`llorch_generated_tokens_total{model_name="tiny"} 3`,
		`llorch_prompt_tokens_cached_total{model_name="tiny"} 0`,
		`llorch_time_to_first_token_seconds_count{model_name="tiny"} 1`,
		`llorch_inter_token_latency_seconds_count{model_name="tiny"} 2`,
		`llorch_request_queue_time_seconds_count{model_name="tiny"} 1`,
		`llorch_request_prefill_time_seconds_count{model_name="tiny"} 1`,
		`llorch_decode_batch_size_count{model_name="tiny"} 2`,
		`llorch_running_requests{model_name="tiny"} 0`,
		`llorch_queue_depth{model_name="tiny"} 0`,
		`llorch_model_memory_bytes{model_name="tiny"} `,
		`llorch_kv_cache_usage_ratio{model_name="tiny"} 0`,
		`llorch_kv_cache_blocks_used{model_name="tiny"} 0`,
		`llorch_kv_cache_blocks_idle{model_name="tiny"} `,
		`llorch_kv_cache_bytes{model_name="tiny"} `,
		`llorch_kv_cache_evictions_total{model_name="tiny"} 0`,
	} {
		require.Contains(t, text, "\n"+want, "want %s", want)
	}
}

// TestMetricsBeforeTheModel: a server still loading reports its HTTP
// metrics and no model series (there is no name to label them with).
func TestMetricsBeforeTheModel(t *testing.T) {
	ts := serve(t, server.New(server.Config{}))
	resp := ts.do(t, "GET", "/healthz", nil)
	resp.Body.Close()
	text := scrape(t, ts)
	require.Contains(t, text, `llorch_requests_total{method="GET",outcome="ok",route="/healthz"} 1`)
	require.NotContains(t, text, "model_name=")
}

// holdSlot starts a stream, job "holder", that holds a slot until it is
// cancelled (/cancel), so what happens to other requests meanwhile does
// not depend on timing.
func holdSlot(t *testing.T, ts *testServer) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	holder := ts.execute(t, ctx, map[string]any{"job_id": "holder", "prompt": "Hi", "max_tokens": 100})
	name, _ := holder.next(t)
	require.Equal(t, "started", name)
	return holder
}

// TestRejectionsCountedAndLoggedOnce: every 429 is counted, but only the
// first of a burst is logged (the rest go into a summary per interval),
// so an overload cannot flood the log.
func TestRejectionsCountedAndLoggedOnce(t *testing.T) {
	var buf syncBuf
	m, tok, _ := tiny.Load(t)
	srv := server.New(server.Config{Parallel: 1, MaxQueue: 0, TokenDelay: 20 * time.Millisecond,
		Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
	require.NoError(t, srv.SetModel(m, tok))
	ts := serve(t, srv)
	holder := holdSlot(t, ts)

	const refused = 5
	for range refused {
		out := ts.call(t, "POST", "/generate", map[string]any{"prompts": []string{"Hello"}, "max_tokens": 2}, http.StatusTooManyRequests)
		require.Equal(t, "QUEUE_FULL", out["error"].(map[string]any)["code"])
	}
	ts.call(t, "POST", "/cancel", map[string]any{"job_id": "holder"}, http.StatusAccepted)
	holder.run2(t)

	text := scrape(t, ts)
	require.Contains(t, text, "\nllorch_rejected_requests_total 5\n")
	require.Contains(t, text, `llorch_requests_total{method="POST",outcome="rejected",route="/generate"} 5`+"\n")
	logged := 0
	for line := range strings.SplitSeq(strings.TrimSpace(buf.String()), "\n") {
		var rec struct {
			Level, Msg string
			Status     int
		}
		require.NoError(t, json.Unmarshal([]byte(line), &rec), line)
		if rec.Status == http.StatusTooManyRequests {
			logged++
			require.Equal(t, "WARN", rec.Level)
		}
	}
	require.Equal(t, 1, logged, "the first 429 of the burst is logged, the other %d are counted for the summary", refused-1)
}

// histogramSum reads a model histogram's _sum from a /metrics text.
func histogramSum(t *testing.T, text, name string) float64 {
	t.Helper()
	for line := range strings.SplitSeq(text, "\n") {
		if rest, ok := strings.CutPrefix(line, name+"_sum{"); ok {
			_, v, _ := strings.Cut(rest, "} ")
			f, err := strconv.ParseFloat(v, 64)
			require.NoError(t, err, line)
			return f
		}
	}
	t.Fatalf("no %s_sum in /metrics", name)
	return 0
}

// TestTimeToFirstTokenIncludesQueueWait: a request that waited for a slot
// counts the wait in its time to first token, as vLLM's metric does, so
// the histogram's sum is at least the queue time's.
func TestTimeToFirstTokenIncludesQueueWait(t *testing.T) {
	ts := start(t, server.Config{Parallel: 1, MaxQueue: 1, TokenDelay: 20 * time.Millisecond})
	holder := holdSlot(t, ts)
	status := make(chan int, 1)
	go func() { // no require off the test's goroutine: the status goes back
		resp, err := http.Post(ts.URL+"/generate", "application/json", strings.NewReader(`{"prompts":["Hello"],"max_tokens":2}`))
		if err != nil {
			status <- 0
			return
		}
		resp.Body.Close()
		status <- resp.StatusCode
	}()
	require.Eventually(t, func() bool {
		return strings.Contains(scrape(t, ts), `llorch_queue_depth{model_name="tiny-gpt2"} 1`)
	}, 10*time.Second, 5*time.Millisecond)
	time.Sleep(200 * time.Millisecond) // a wait longer than both requests' first steps
	ts.call(t, "POST", "/cancel", map[string]any{"job_id": "holder"}, http.StatusAccepted)
	holder.run2(t)
	require.Equal(t, http.StatusOK, <-status)
	text := scrape(t, ts)
	queue := histogramSum(t, text, "llorch_request_queue_time_seconds")
	require.Greater(t, queue, 0.2)
	require.GreaterOrEqual(t, histogramSum(t, text, "llorch_time_to_first_token_seconds"), queue)
}
