package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/internal/fixture/shards"
	"github.com/llorch/llorch-check/references"
)

// shardedHash is model.weights_sha256 of a sharded checkpoint, computed
// here from its definition (references/FORMAT.md): sha256 of sha256sum's
// listing of the shards, sorted by name.
func shardedHash(t *testing.T, dir string, n int) string {
	t.Helper()
	listing := ""
	for i := range n {
		b, err := os.ReadFile(filepath.Join(dir, shards.ShardName(i, n)))
		require.NoError(t, err)
		listing += fmt.Sprintf("%x  %s\n", sha256.Sum256(b), shards.ShardName(i, n))
	}
	h := sha256.Sum256([]byte(listing))
	return hex.EncodeToString(h[:])
}

// TestRunShards: run, bisect and generate take a checkpoint in Hugging
// Face's sharded layout; a set records the shards' hash, and a set made
// from the single file is refused as other weights (exit 2) naming the
// index.
func TestRunShards(t *testing.T) {
	const name = "tiny-llama-qwen2"
	dir := shards.Copy(t, fixture.FamilyModel(name), 3, "")
	refs := fixture.CopyDir(t, fixture.FamilyReferences(name))

	code, _, stderr := runCLI(t, "run", "--model", dir, "--references", refs)
	require.Equal(t, exitBadInput, code, stderr)
	require.Contains(t, stderr, "model.safetensors.index.json")
	require.Contains(t, stderr, shardedHash(t, dir, 3))

	fixture.EditJSON(t, filepath.Join(refs, references.ManifestFile), func(m map[string]any) {
		m["model"].(map[string]any)["weights_sha256"] = shardedHash(t, dir, 3)
		m["model"].(map[string]any)["weights_file"] = "model.safetensors.index.json"
	})
	code, out, stderr := runCLI(t, "run", "--model", dir, "--references", refs)
	require.Equal(t, exitOK, code, stderr)
	require.Regexp(t, `PASS: \d+ checks passed, 0 failed`, out)
	require.Contains(t, out, "model:      "+dir)

	code, out, stderr = runCLI(t, "generate", "--model", dir, "--tokens", "1,450,7483", "--max-tokens", "3")
	require.Equal(t, exitOK, code, stderr)
	require.NotEmpty(t, out)
}

// TestInspectSafetensors: inspect reads an HF checkpoint (a directory, its
// model.safetensors or its index) as it reads GGUF: shards, dtypes and the
// parameter count.
func TestInspectSafetensors(t *testing.T) {
	dir := shards.Copy(t, fixture.FamilyModel("tiny-llama"), 3, "BF16")
	for _, arg := range []string{dir, filepath.Join(dir, "model.safetensors.index.json")} {
		code, out, stderr := runCLI(t, "inspect", arg)
		require.Equal(t, exitOK, code, stderr)
		require.Contains(t, out, "shards:     3")
		require.Contains(t, out, shards.ShardName(2, 3))
		require.Contains(t, out, "model.layers.1.mlp.down_proj.weight")
		require.Regexp(t, `parameters: 4,?\d{3},?\d{3} \(BF16\)`, out)
	}
	code, out, stderr := runCLI(t, "inspect", filepath.Join(fixture.FamilyModel("tiny-llama"), "model.safetensors"))
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, out, "shards:     1")
	require.Contains(t, out, "(F16)")
}

// TestGenerateStopsOnGenerationConfigEOS: a chat model's end-of-turn token
// is listed in generation_config.json, not config.json; generation stops
// on it. The tiny model's greedy continuation of these tokens is 372,
// 31271, ...: with 31271 listed there, generation ends at it.
func TestGenerateStopsOnGenerationConfigEOS(t *testing.T) {
	dir := fixture.CopyDir(t, fixture.FamilyModel("tiny-llama3"))
	args := []string{"generate", "--model", dir, "--tokens", "1,450,7483", "--max-tokens", "4", "--temperature", "0", "--json"}
	code, out, stderr := runCLI(t, args...)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, out, `"tokens":[372,`)
	require.Contains(t, out, `"stop_reason":"max_tokens"`)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "generation_config.json"), []byte(`{"eos_token_id": [2, 31271]}`), 0o644))
	code, out, stderr = runCLI(t, args...)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, out, `"tokens":[372,31271]`)
	require.Contains(t, out, `"stop_reason":"eos"`)
}
