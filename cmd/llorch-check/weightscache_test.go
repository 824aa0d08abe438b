package main

import (
	"os"
	"path/filepath"
	"testing"

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
