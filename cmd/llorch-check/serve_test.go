package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture"
)

// syncBuffer is a log sink the test reads while the server writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startServeCmd runs newServeCmd in-process until the returned stop is
// called; it returns the command's error through errc.
func startServeCmd(t *testing.T, args ...string) (logs *syncBuffer, errc chan error, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := newServeCmd()
	logs = &syncBuffer{}
	cmd.SetArgs(append([]string{"--model", fixture.TinyModel(), "--port", "0"}, args...))
	cmd.SetOut(io.Discard)
	cmd.SetErr(logs)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	errc = make(chan error, 1)
	go func() { errc <- cmd.ExecuteContext(ctx) }()
	t.Cleanup(cancel)
	return logs, errc, cancel
}

// TestServeFlagsRejected: every flag is checked before the port is bound
// (nothing is logged as listening), naming the flag.
func TestServeFlagsRejected(t *testing.T) {
	// A config.json alone: a KV cache of 2^28 of its positions is 275 GB,
	// more than any test machine, and no weights are read to find out.
	// (--parallel full contexts beyond the memory are no error: the
	// default bound is then what the memory holds, TestKVBudget.)
	big := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(big, "config.json"),
		[]byte(`{"model_type":"gpt2","vocab_size":97,"n_positions":16777216,"n_embd":64,"n_layer":2,"n_head":4}`), 0o644))
	badTemplate := filepath.Join(t.TempDir(), "chat.tmpl")
	require.NoError(t, os.WriteFile(badTemplate, []byte("{{range .Messages}}{{.Text}}{{end}}"), 0o644))
	for _, args := range [][]string{
		{"--parallel", "0"}, {"--port", "70000"}, {"--max-queue", "-1"}, {"--log-level", "loud"},
		{"--shutdown-timeout", "-1s"}, {"--read-timeout", "-2s"}, {"--weight-dtype", "f8"}, {"--parallel", "100000"},
		{"--kv-cache-tokens", "268435456", "--model", big},
		{"--chat-template", filepath.Join(big, "missing.tmpl")}, {"--chat-template", badTemplate}, {"--inject-fault", "bogus@1"},
		{"--max-connections", "-1"},
	} {
		cmd := newServeCmd()
		cmd.SetArgs(args)
		var stderr bytes.Buffer
		cmd.SetOut(io.Discard)
		cmd.SetErr(&stderr)
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		err := cmd.ExecuteContext(context.Background())
		require.Error(t, err, "%v", args)
		require.Contains(t, err.Error(), args[0], "the error names the flag")
		require.NotContains(t, stderr.String(), "listening", "%v: checked before binding", args)
	}
}

// TestServeWarnsOpenToTheNetwork: listening beyond loopback with no API
// key is allowed but logged as a warning.
func TestServeWarnsOpenToTheNetwork(t *testing.T) {
	logs, errc, stop := startServeCmd(t, "--host", "0.0.0.0")
	listenAddr(t, logs)
	require.Contains(t, logs.String(), "without an API key")
	stop()
	<-errc
}

// TestServeCallback: once the model is loaded the orchestrator is told,
// with retries until it accepts; the worker then serves at the URI given.
func TestServeCallback(t *testing.T) {
	var mu sync.Mutex
	attempts := 0
	got := make(chan map[string]any, 1)
	orch := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		attempts++
		n := attempts
		mu.Unlock()
		if n < 3 {
			http.Error(w, "not yet", http.StatusServiceUnavailable)
			return
		}
		var p map[string]any
		_ = json.NewDecoder(r.Body).Decode(&p)
		got <- p
	}))
	defer orch.Close()

	_, errc, stop := startServeCmd(t, "--callback-url", orch.URL, "--worker-id", "w7")
	var p map[string]any
	select {
	case p = <-got:
	case err := <-errc:
		t.Fatalf("serve ended before the callback: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("no callback")
	}
	require.Equal(t, "w7", p["worker_id"])
	require.Equal(t, "tiny-gpt2", p["model_ref"])
	require.EqualValues(t, 0, p["vram_bytes"])
	require.Greater(t, p["memory_bytes"].(float64), 0.0)
	uri := p["uri"].(string)
	resp, err := http.Get(uri + "/readyz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	stop()
	require.NoError(t, <-errc, "a signal drains and ends cleanly")
}

func TestServeCallbackNeverSucceeds(t *testing.T) {
	orch := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusInternalServerError)
	}))
	defer orch.Close()
	_, errc, _ := startServeCmd(t, "--callback-url", orch.URL, "--callback-timeout", "1s")
	select {
	case err := <-errc:
		require.Error(t, err)
		require.Contains(t, err.Error(), "--callback-url")
		require.Contains(t, err.Error(), "500")
	case <-time.After(60 * time.Second):
		t.Fatal("serve did not give up on the callback")
	}
}

// buildBinary builds llorch-check into the test's temp dir: the drain
// test needs a real process to signal.
func buildBinary(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "llorch-check")
	out, err := exec.Command("go", "build", "-o", path, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return path
}

// TestServeDrainOnSIGTERM runs the real binary: SIGTERM during a stream
// turns readiness off first, lets the stream finish, and exits 0.
func TestServeDrainOnSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	cmd := exec.Command(bin, "serve", "--model", fixture.TinyModel(), "--port", "0", "--token-delay", "20ms")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill() }()

	// The JSON log's "listening" line carries the port.
	lines := bufio.NewScanner(stderr)
	addr := ""
	for addr == "" && lines.Scan() {
		var rec map[string]any
		if json.Unmarshal(lines.Bytes(), &rec) == nil && rec["msg"] == "listening" {
			addr = rec["addr"].(string)
		}
	}
	require.NotEmpty(t, addr, "no listening line in the log")
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	base := "http://" + addr
	require.Eventually(t, func() bool { return readyzStatus(base) == http.StatusOK }, 60*time.Second, 20*time.Millisecond)

	body := `{"job_id":"drain","prompt":"Hello.","max_tokens":60,"temperature":0}`
	resp, err := http.Post(base+"/execute", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	events := bufio.NewScanner(resp.Body)
	next := func() string {
		for events.Scan() {
			if name, ok := strings.CutPrefix(events.Text(), "event: "); ok {
				return name
			}
		}
		return ""
	}
	require.Equal(t, "started", next())
	require.Equal(t, "token", next())

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	// Readiness is off while the stream still runs (60 × 20 ms).
	require.Eventually(t, func() bool { return readyzStatus(base) == http.StatusServiceUnavailable }, 5*time.Second, 5*time.Millisecond)

	tokens, last := 1, ""
	for name := next(); name != ""; name = next() {
		if name == "token" {
			tokens++
		}
		last = name
	}
	require.Equal(t, "end", last, "the stream in flight finishes")
	require.Equal(t, 60, tokens)

	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err, "exit status 0 after the drain")
	case <-time.After(30 * time.Second):
		t.Fatal("the process did not exit after draining")
	}
}

// listenAddr waits for the "listening" line of the JSON log.
func listenAddr(t *testing.T, logs *syncBuffer) string {
	t.Helper()
	var addr string
	require.Eventually(t, func() bool {
		for line := range strings.SplitSeq(logs.String(), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == "listening" {
				addr = rec["addr"].(string)
				return true
			}
		}
		return false
	}, 30*time.Second, 10*time.Millisecond)
	return addr
}

func TestServeValidatesReferences(t *testing.T) {
	logs, errc, stop := startServeCmd(t, "--references", fixture.TinyReferences(), "--api-key", "k")
	base := "http://" + listenAddr(t, logs)
	require.Eventually(t, func() bool {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 120*time.Second, 20*time.Millisecond)
	resp, err := http.Get(base + "/health")
	require.NoError(t, err)
	var h struct {
		Validation struct {
			Status        string `json:"status"`
			Passed, Total int
		} `json:"validation"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&h))
	resp.Body.Close()
	require.Equal(t, "passed", h.Validation.Status)
	require.Equal(t, h.Validation.Total, h.Validation.Passed)
	// --api-key guards the model routes.
	resp, err = http.Post(base+"/tokenize", "application/json", strings.NewReader(`{"prompt":"hi"}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	stop()
	require.NoError(t, <-errc)
	require.Contains(t, logs.String(), `"msg":"validation passed"`)
}

// readyzStatus is /readyz's status code, or 0 when the server is not reachable.
func readyzStatus(base string) int {
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestProbeCLI: probe passes llorch-check's own server and is exit 2 for
// one that cannot be reached.
func TestProbeCLI(t *testing.T) {
	logs, errc, stop := startServeCmd(t)
	base := "http://" + listenAddr(t, logs)
	require.Eventually(t, func() bool { return readyzStatus(base) == http.StatusOK }, 30*time.Second, 10*time.Millisecond)
	code, out, stderr := runCLI(t, "probe", "--endpoint", base, "--references", fixture.TinyReferences())
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, out, "PASS: ")
	stop()
	<-errc
	code, _, stderr = runCLI(t, "probe", "--endpoint", base, "--references", fixture.TinyReferences())
	require.Equal(t, exitBadInput, code)
	require.Contains(t, stderr, "connection refused")
}

// TestServeHeaderCap: a request head past 32 KB (nginx's default) is
// refused with 431 and the server keeps serving; net/http's default let
// 1 MiB heads through (issue #43 row 9).
func TestServeHeaderCap(t *testing.T) {
	logs, _, stop := startServeCmd(t)
	defer stop()
	base := "http://" + listenAddr(t, logs)
	for _, tc := range []struct {
		header int
		want   int
	}{{40 << 10, http.StatusRequestHeaderFieldsTooLarge}, {8 << 10, http.StatusOK}} {
		req, err := http.NewRequest("GET", base+"/healthz", nil)
		require.NoError(t, err)
		req.Header.Set("X-Long", strings.Repeat("a", tc.header))
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, tc.want, resp.StatusCode, "a %d-byte header", tc.header)
	}
}
