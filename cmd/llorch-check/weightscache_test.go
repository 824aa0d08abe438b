package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture"
)

// TestRunWeightsCache: run --weights-cache on a GGUF file writes the cache
// on the first load and reads it on the next; both pass every checkpoint
// of the model's reference set.
func TestRunWeightsCache(t *testing.T) {
	dir := t.TempDir()
	gguf := convertFamily(t, dir, "tiny-llama-qwen2", "f16")
	cache := filepath.Join(dir, "cache")
	for range 2 {
		code, stdout, stderr := runCLI(t, "run", "--model", gguf, "--references", fixture.FamilyReferences("tiny-llama-qwen2"),
			"--weights-cache", cache, "--checkpoint", "1-10")
		require.NotEqual(t, exitBadInput, code, stderr)
		require.Contains(t, stdout, "PASS", stderr)
		entries, err := os.ReadDir(cache)
		require.NoError(t, err)
		require.Len(t, entries, 1, "one cache file a model")
	}
}

// TestServeWeightsCache: serve writes the cache while it serves after a
// first start, and a second start maps it; the log says which.
func TestServeWeightsCache(t *testing.T) {
	dir := t.TempDir()
	gguf := convertFamily(t, dir, "tiny-llama-qwen2", "q8_0")
	cache := filepath.Join(dir, "cache")
	for _, want := range []string{`"weights_cache":"written to ` + cache, `"weights_cache":"read from ` + cache} {
		logs, _, stop := startServeCmd(t, "--model", gguf, "--weights-cache", cache)
		require.Eventually(t, func() bool { return strings.Contains(logs.String(), want) }, 60*time.Second, 20*time.Millisecond, logs.String())
		base := "http://" + listenAddr(t, logs)
		require.Eventually(t, func() bool { return status(base+"/readyz") == 200 }, 60*time.Second, 20*time.Millisecond)
		stop()
	}
}
