package main

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture"
)

// TestServePrintConfig: the effective settings with their sources, from
// a flag, the environment and a file, the key redacted; nothing loads.
func TestServePrintConfig(t *testing.T) {
	file := filepath.Join(t.TempDir(), "serve.yaml")
	require.NoError(t, os.WriteFile(file, []byte("parallel: 2\nmax_queue: 9\nport: 1\n"), 0o644))
	t.Setenv("LLORCH_MAX_QUEUE", "7")
	t.Setenv("LLORCH_API_KEY", "s3cret")
	code, out, errOut := runCLI(t, "serve", "--config", file, "--port", "9999", "--print-config")
	require.Equal(t, 0, code, errOut)
	for _, re := range []string{`port\s+9999\s+# flag`, `max-queue\s+7\s+# env`, `parallel\s+2\s+# file`,
		`host\s+127.0.0.1\s+# default`, `api-key\s+<redacted>\s+# env`} {
		require.Regexp(t, re, out)
	}
	require.NotContains(t, out, "s3cret")
	require.NotContains(t, errOut, "listening")
	// The hidden demo flag shows only when set.
	require.NotRegexp(t, `(?m)^token-delay\s`, out)
	code, out, errOut = runCLI(t, "serve", "--token-delay", "5ms", "--print-config")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `token-delay\s+5ms\s+# flag`, out)
}

func TestServeConfigErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "serve.yaml")
	require.NoError(t, os.WriteFile(file, []byte("parallel: 2\nparalel: 3\n"), 0o644))
	code, _, errOut := runCLI(t, "serve", "--config", file, "--print-config")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, `serve.yaml:2: unknown setting "paralel"`)
	t.Setenv("LLORCH_PORT", "eighty")
	code, _, errOut = runCLI(t, "serve", "--print-config")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "$LLORCH_PORT")
}

// TestServeDryRun: load, warm up and validate without listening; exit 0
// when the model passes, 1 when a planted bug fails it, 2 for bad input.
func TestServeDryRun(t *testing.T) {
	base := []string{"serve", "--dry-run", "--model", fixture.TinyModel(), "--references", fixture.TinyReferences()}
	code, out, errOut := runCLI(t, base...)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "tokenizer and warm-up ok")
	require.Contains(t, out, "PASS")
	require.NotContains(t, errOut, "listening")

	code, out, _ = runCLI(t, append(base, "--inject-fault", "erf-gelu")...)
	require.Equal(t, 1, code)
	require.Contains(t, out, "FAIL")

	code, _, errOut = runCLI(t, "serve", "--dry-run", "--model", fixture.TinyModel(), "--references", t.TempDir())
	require.Equal(t, 2, code)
	require.True(t, strings.Contains(errOut, "manifest"), errOut)

	// A float16 KV cache passes its f16-kv set at the default tolerances.
	code, out, errOut = runCLI(t, "serve", "--dry-run", "--kv-cache-dtype", "f16", "--model", fixture.TinyModel(),
		"--references", f16KVReferences("tiny-gpt2"))
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "PASS")
}

// TestServeWarmsUpBeforeReady: the warm-up decode is logged before the
// model is handed to the server, so /readyz is 200 only after it.
func TestServeWarmsUpBeforeReady(t *testing.T) {
	logs, _, stop := startServeCmd(t)
	defer stop()
	base := "http://" + listenAddr(t, logs)
	require.Eventually(t, func() bool { return status(base+"/readyz") == 200 }, 60*time.Second, 20*time.Millisecond)
	out := logs.String()
	warm, loaded := strings.Index(out, `"msg":"warm-up done"`), strings.Index(out, `"msg":"model loaded"`)
	require.True(t, warm >= 0 && loaded > warm, "warm-up (at %d) before the model is served (at %d):\n%s", warm, loaded, out)
}

func status(url string) int {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestServeHelpListsEveryRoute: serve --help names every route the server
// registers (server/routes.go), so a new route cannot go unlisted.
func TestServeHelpListsEveryRoute(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "..", "server", "routes.go"))
	require.NoError(t, err)
	code, out, _ := runCLI(t, "serve", "--help")
	require.Equal(t, exitOK, code)
	routes := regexp.MustCompile(`"(?:GET|POST) (/[^"{]*)`).FindAllStringSubmatch(string(src), -1)
	require.Greater(t, len(routes), 10, "too few routes read from server/routes.go")
	for _, m := range routes {
		path := strings.TrimSuffix(m[1], "/") // "/v1/models/{id...}" is /v1/models's
		if path == "" {
			path = "/" // "GET /{$}", the page
		}
		named := regexp.MustCompile(`(^|[\s(])` + regexp.QuoteMeta(path) + `([\s),.]|$)`)
		require.Regexp(t, named, out, "serve --help does not name %s", path)
	}
}
