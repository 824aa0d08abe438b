package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/checkpoints"
	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/internal/httprecord"
	"github.com/llorch/llorch-check/loader"
	"github.com/llorch/llorch-check/model"
)

// startServe runs serve with args and waits until it is ready.
func startServe(t *testing.T, args ...string) (base string, stop func()) {
	t.Helper()
	logs, errc, cancel := startServeCmd(t, args...)
	base = "http://" + listenAddr(t, logs)
	require.Eventually(t, func() bool { return readyzStatus(base) == http.StatusOK }, 30*time.Second, 10*time.Millisecond)
	return base, func() { cancel(); <-errc }
}

// TestProbeCLIDialects: probe passes serve through each API it speaks,
// and says which it used and how it chose.
func TestProbeCLIDialects(t *testing.T) {
	base, stop := startServe(t)
	defer stop()
	for _, tc := range []struct{ api, says string }{
		{"auto", "api:        openai (detected: GET /v1/models answered a model list)"},
		{"openai", "api:        openai (--api)"},
		{"worker", "api:        worker (--api)"},
		{"llorch", "api:        llorch (--api)"},
	} {
		code, out, stderr := runCLI(t, "probe", "--endpoint", base, "--references", fixture.TinyReferences(), "--api", tc.api)
		require.Equal(t, exitOK, code, "%s: %s%s", tc.api, out, stderr)
		require.Contains(t, out, tc.says)
		require.Contains(t, out, "PASS: ")
	}
}

// TestProbeCLIFaults: each fault serve --inject-fault plants in the tiny
// GPT-2 is caught from outside and named at checkpoint 9, exit 1.
func TestProbeCLIFaults(t *testing.T) {
	cfg, err := loader.ReadConfig(fixture.TinyModel())
	require.NoError(t, err)
	for _, fault := range strings.Split(model.FaultNames(), ", ") {
		if f, err := model.ParseFault(fault); err != nil || !f.AppliesTo(cfg) {
			continue
		}
		t.Run(fault, func(t *testing.T) {
			base, stop := startServe(t, "--inject-fault", fault)
			defer stop()
			code, out, stderr := runCLI(t, "probe", "--endpoint", base, "--references", fixture.TinyReferences(), "--format", "json", "--invariance=false")
			require.Equal(t, exitFailed, code, stderr)
			var rep checkpoints.Report
			require.NoError(t, json.Unmarshal([]byte(out), &rep))
			require.False(t, rep.Passed)
			require.Equal(t, 9, rep.Failures()[0].Checkpoint)
			require.Empty(t, rep.Invariance, "--invariance=false")
		})
	}
}

// TestProbeCLIRejectsFlags: bad flags are exit 2 naming the flag, before
// any request.
func TestProbeCLIRejectsFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--api", "grpc"}, {"--top-k", "1"}, {"--every", "-1s"}, {"--metrics-addr", "127.0.0.1:0"},
		{"--every", "1m", "--metrics-addr", "nonsense"}, {"--format", "xml"}, {"--corpus-chunks", "-1"},
		{"--every", "1m", "--record", "x.jsonl"},
	} {
		code, _, stderr := runCLI(t, append([]string{"probe", "--endpoint", "http://127.0.0.1:1"}, args...)...)
		require.Equal(t, exitBadInput, code, "%v", args)
		require.Contains(t, stderr, args[len(args)-2], "%v: the error names the flag", args)
	}
}

// TestProbeCLICanary: --every re-checks, serves its verdict at
// --metrics-addr, and a signal (the context ending) stops it with exit 0.
func TestProbeCLICanary(t *testing.T) {
	base, stop := startServe(t)
	defer stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- execute(ctx, []string{"probe", "--endpoint", base, "--references", fixture.TinyReferences(),
			"--every", "50ms", "--metrics-addr", "127.0.0.1:0"}, io.Discard, &stderr)
	}()
	var addr string
	require.Eventually(t, func() bool {
		for line := range strings.SplitSeq(stderr.String(), "\n") {
			var rec struct{ Msg, Addr string }
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "metrics" {
				addr = rec.Addr
				return true
			}
		}
		return false
	}, 30*time.Second, 10*time.Millisecond)
	var metrics string
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		metrics = string(b)
		return strings.Contains(metrics, "\nllorch_probe_passed 1\n") && !strings.Contains(metrics, `llorch_probe_runs_total{result="pass"} 1`+"\n")
	}, time.Minute, 20*time.Millisecond, "two passing runs")
	require.Contains(t, metrics, `llorch_probe_runs_total{result="error"} 0`)
	cancel()
	select {
	case code := <-done:
		require.Equal(t, exitOK, code, stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatal("the canary did not stop when its context ended")
	}
	require.Contains(t, stderr.String(), `"msg":"canary stopped"`)
	require.Contains(t, stderr.String(), `"result":"pass"`)
	_, err := http.Get("http://" + addr + "/metrics")
	require.Error(t, err, "the metrics listener is closed")
}

// TestProbeCLIBadEndpoints: a server that errs, answers garbage or cuts
// its stream short is exit 2 with the reason, never a pass.
func TestProbeCLIBadEndpoints(t *testing.T) {
	for _, tc := range []struct {
		name, api, contentType, body, says string
		status                             int
	}{
		{"500", "openai", "application/json", `{"error":"boom"}`, "answered 500", http.StatusInternalServerError},
		{"garbage", "openai", "text/html", "<html>", "not its JSON", http.StatusOK},
		{"truncated SSE", "worker", "text/event-stream", "event: started\ndata: {\"type\":\"started\",\"prompt_tokens\":2}\n\n", "truncated", http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tc.contentType)
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			}))
			defer ts.Close()
			code, out, stderr := runCLI(t, "probe", "--endpoint", ts.URL, "--references", fixture.TinyReferences(), "--api", tc.api)
			require.Equal(t, exitBadInput, code, out)
			require.Empty(t, out, "no report for a server that did not answer its API")
			require.Contains(t, stderr, "server: ")
			require.Contains(t, stderr, tc.says)
		})
	}
}

// TestProbeCLICorpusAndRecord: --corpus adds the distribution verdict
// (serve, Go's float32, within a few times PyTorch float32's own
// divergence), --record keeps every exchange, also when the probe ends
// in an error, and a corpus set of other weights is exit 2.
func TestProbeCLICorpusAndRecord(t *testing.T) {
	base, stop := startServe(t)
	defer stop()
	corpus := filepath.Join(fixture.Root(), "testdata", "references", "tiny-gpt2-corpus")
	rec := filepath.Join(t.TempDir(), "rec.jsonl.gz")
	code, out, stderr := runCLI(t, "probe", "--endpoint", base, "--references", fixture.TinyReferences(),
		"--corpus", corpus, "--corpus-chunks", "2", "--record", rec, "--format", "json")
	require.Equal(t, exitOK, code, stderr)
	var rep checkpoints.Report
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.NotNil(t, rep.Corpus)
	require.Equal(t, 2*63, rep.Corpus.Positions)
	require.Equal(t, rep.Corpus.Positions, rep.Corpus.Engine.Top1.Of)
	require.NotNil(t, rep.Corpus.Engine.PPLRatio, "echo gives every next token's log-probability")
	require.Less(t, float64(rep.Corpus.Times.Value), 10.0, "Go's float32 forward is as close to the truth as PyTorch's")
	ex, err := httprecord.Read(rec)
	require.NoError(t, err)
	require.NotEmpty(t, ex)
	require.Equal(t, "GET", ex[0].Method)

	// The recording is written when the server stops answering its API too.
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", 500) }))
	defer down.Close()
	code, _, _ = runCLI(t, "probe", "--endpoint", down.URL, "--references", fixture.TinyReferences(), "--api", "openai", "--record", rec)
	require.Equal(t, exitBadInput, code)
	ex, err = httprecord.Read(rec)
	require.NoError(t, err)
	require.Equal(t, 500, ex[len(ex)-1].Status)

	other := fixture.CopyDir(t, corpus)
	manifest := filepath.Join(other, "corpus.json")
	b, err := os.ReadFile(manifest)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	m["model"].(map[string]any)["weights_sha256"] = strings.Repeat("0", 64)
	b, err = json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(manifest, b, 0o644))
	code, _, stderr = runCLI(t, "probe", "--endpoint", base, "--references", fixture.TinyReferences(), "--corpus", other)
	require.Equal(t, exitBadInput, code)
	require.Contains(t, stderr, "not the same model")
}
