package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture"
)

// serveProcess starts the real binary on a free port and returns it, its
// base URL and its log lines so far (the rest are collected as they come).
func serveProcess(t *testing.T, args ...string) (*exec.Cmd, string, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(buildBinary(t), append([]string{"serve", "--model", fixture.TinyModel(), "--port", "0"}, args...)...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	logs := &syncBuffer{}
	lines := bufio.NewScanner(stderr)
	addr := ""
	for addr == "" && lines.Scan() {
		logs.Write(append(lines.Bytes(), '\n'))
		var rec map[string]any
		if json.Unmarshal(lines.Bytes(), &rec) == nil && rec["msg"] == "listening" {
			addr = rec["addr"].(string)
		}
	}
	require.NotEmpty(t, addr, "no listening line in the log")
	go func() { _, _ = io.Copy(logs, stderr) }()
	base := "http://" + addr
	require.Eventually(t, func() bool { return readyzStatus(base) == http.StatusOK }, 60*time.Second, 20*time.Millisecond)
	return cmd, base, logs
}

// post starts a streaming request and returns a reader of its lines.
func post(t *testing.T, url, body string) (*http.Response, *bufio.Scanner) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp, bufio.NewScanner(resp.Body)
}

// nextLine returns the next line with prefix, without it ("" at the end).
func nextLine(sc *bufio.Scanner, prefix string) string {
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), prefix); ok {
			return rest
		}
	}
	return ""
}

// waitExit waits for the process and returns its exit code.
func waitExit(t *testing.T, cmd *exec.Cmd, within time.Duration) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		require.NoError(t, err)
		return 0
	case <-time.After(within):
		t.Fatalf("the process did not exit within %s", within)
		return -1
	}
}

// TestServeDrainPastDeadline: when --shutdown-timeout runs out, no stream
// is cut silently: a worker stream ends with an error event SHUTDOWN, an
// OpenAI stream with an error chunk and [DONE], a queued request gets a
// 503; the log says what was dropped and the exit status is not 0.
func TestServeDrainPastDeadline(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	cmd, base, logs := serveProcess(t, "--token-delay", "50ms", "--parallel", "2", "--max-queue", "2", "--shutdown-timeout", "300ms")
	_, worker := post(t, base+"/execute", `{"job_id":"long","prompt":"Hello.","max_tokens":100,"temperature":0}`)
	require.Equal(t, "started", nextLine(worker, "event: "))
	_, openai := post(t, base+"/v1/completions", `{"prompt":"Hello.","max_tokens":100,"temperature":0,"stream":true}`)
	require.NotEmpty(t, nextLine(openai, "data: "))
	queued := make(chan *http.Response, 1)
	go func() {
		resp, err := http.Post(base+"/generate", "application/json", strings.NewReader(`{"prompts":["Hi"],"max_tokens":5}`))
		if err == nil {
			queued <- resp
		}
		close(queued)
	}()
	require.Eventually(t, func() bool {
		resp, err := http.Get(base + "/health")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var h map[string]any
		return json.NewDecoder(resp.Body).Decode(&h) == nil && h["queued"] == 1.0
	}, 10*time.Second, 10*time.Millisecond)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	last := ""
	for name := nextLine(worker, "event: "); name != ""; name = nextLine(worker, "event: ") {
		last = name
	}
	require.Equal(t, "error", last, "the worker stream ends with a terminal event")
	var chunks []string
	for d := nextLine(openai, "data: "); d != ""; d = nextLine(openai, "data: ") {
		chunks = append(chunks, d)
	}
	require.GreaterOrEqual(t, len(chunks), 2)
	require.Contains(t, chunks[len(chunks)-2], `"code":"SHUTDOWN"`)
	require.Equal(t, "[DONE]", chunks[len(chunks)-1])
	resp := <-queued
	require.NotNil(t, resp, "the queued request got no HTTP response")
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s", b)
	require.Contains(t, string(b), "SHUTDOWN")
	require.NotEqual(t, 0, waitExit(t, cmd, 30*time.Second), "a drain cut short is not a clean exit")
	require.Contains(t, logs.String(), "jobs in flight ended with SHUTDOWN")
}

// TestServeSecondSignalForcesExit: a second SIGTERM does not wait for the
// drain, yet every open stream still ends with exactly one final event.
func TestServeSecondSignalForcesExit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	cmd, base, logs := serveProcess(t, "--token-delay", "50ms", "--shutdown-timeout", "60s")
	worker, openai := openStreams(t, base)
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.Eventually(t, func() bool { return readyzStatus(base) == http.StatusServiceUnavailable }, 5*time.Second, 5*time.Millisecond)
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	requireOneShutdownEvent(t, worker, openai)
	require.NotEqual(t, 0, waitExit(t, cmd, 5*time.Second))
	require.Contains(t, logs.String(), "second signal")
}

// TestServeCallbackFailureEndsStreams: serve gives up when the ready
// callback never succeeds; the streams it already serves still end with
// exactly one final event, not cut.
func TestServeCallbackFailureEndsStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	orch := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer orch.Close()
	cmd, base, logs := serveProcess(t, "--token-delay", "50ms", "--callback-url", orch.URL, "--callback-timeout", "2s")
	worker, openai := openStreams(t, base)
	requireOneShutdownEvent(t, worker, openai)
	require.NotEqual(t, 0, waitExit(t, cmd, 10*time.Second))
	require.Contains(t, logs.String(), "--callback-url")
}

// openStreams starts a worker and an OpenAI stream of 100 tokens each and
// reads their first event.
func openStreams(t *testing.T, base string) (worker, openai *bufio.Scanner) {
	t.Helper()
	_, worker = post(t, base+"/execute", `{"job_id":"long","prompt":"Hello.","max_tokens":100,"temperature":0}`)
	require.Equal(t, "started", nextLine(worker, "event: "))
	_, openai = post(t, base+"/v1/completions", `{"prompt":"Hello.","max_tokens":100,"temperature":0,"stream":true}`)
	require.NotEmpty(t, nextLine(openai, "data: "))
	return worker, openai
}

// requireOneShutdownEvent reads both streams to their end: the worker's
// has exactly one final event, an error SHUTDOWN; the OpenAI one exactly
// one error chunk SHUTDOWN and one [DONE].
func requireOneShutdownEvent(t *testing.T, worker, openai *bufio.Scanner) {
	t.Helper()
	var final []string
	data := ""
	for name := nextLine(worker, "event: "); name != ""; name = nextLine(worker, "event: ") {
		if name == "end" || name == "error" {
			final = append(final, name)
			data = nextLine(worker, "data: ")
		}
	}
	require.Equal(t, []string{"error"}, final, "exactly one final event")
	require.Contains(t, data, `"code":"SHUTDOWN"`)
	var errs, dones int
	for d := nextLine(openai, "data: "); d != ""; d = nextLine(openai, "data: ") {
		switch {
		case d == "[DONE]":
			dones++
		case strings.Contains(d, `"error"`):
			errs++
			data = d
		}
	}
	require.Equal(t, 1, errs, "exactly one error chunk")
	require.Equal(t, 1, dones, "exactly one [DONE]")
	require.Contains(t, data, `"code":"SHUTDOWN"`)
}
