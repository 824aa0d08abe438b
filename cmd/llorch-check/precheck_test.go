package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/references"
)

// TestChecksBeforeLoad: run, bisect and dump refuse a set made from other
// weights, or with another --layers, before they load the model: here the
// weights file is not even safetensors, and the refusal is the set's, not
// the loader's.
func TestChecksBeforeLoad(t *testing.T) {
	const name = "tiny-llama"
	dir := fixture.CopyDir(t, fixture.FamilyModel(name))
	refs := fixture.FamilyReferences(name)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "model.safetensors"), []byte("not safetensors, and not loaded"), 0o644))
	for _, cmd := range [][]string{
		{"run", "--model", dir, "--references", refs},
		{"bisect", "--model", dir, "--references", refs},
		{"dump", "--model", dir, "--references", refs, "--out", filepath.Join(t.TempDir(), "out")},
	} {
		code, _, stderr := runCLI(t, cmd...)
		require.Equal(t, exitBadInput, code, stderr)
		require.Contains(t, stderr, "sha256", cmd)
		require.NotContains(t, stderr, "header", cmd)
	}

	// --layers: the set ran both blocks.
	code, _, stderr := runCLI(t, "run", "--model", fixture.FamilyModel(name), "--references", refs, "--layers", "1")
	require.Equal(t, exitBadInput, code, stderr)
	require.Contains(t, stderr, "ran 2 of the model's 2 blocks (dump_references.py --layers), this run 1: give --layers 2")
	code, _, stderr = runCLI(t, "run", "--model", fixture.FamilyModel(name), "--references", refs, "--layers", "2")
	require.Equal(t, exitOK, code, stderr)

	// A set that ran one block (its tensors of layer 1 dropped) is
	// refused with --layers 2; one that claims more blocks than the
	// config has is refused as a set.
	one := fixture.CopyDir(t, refs)
	fixture.EditJSON(t, filepath.Join(one, references.ManifestFile), func(m map[string]any) {
		m["model"].(map[string]any)["layers"] = 1
		var kept []any
		for _, ti := range m["tensors"].([]any) {
			if l, ok := ti.(map[string]any)["layer"].(float64); !ok || l < 1 {
				kept = append(kept, ti)
			}
		}
		m["tensors"] = kept
	})
	code, _, stderr = runCLI(t, "run", "--model", fixture.FamilyModel(name), "--references", one, "--layers", "2")
	require.Equal(t, exitBadInput, code, stderr)
	require.Contains(t, stderr, "ran 1 of the model's 2 blocks (dump_references.py --layers), this run 2: give --layers 1")
	// Go's own one-block forward, dumped from that set, is the set a
	// later run takes --layers 1 from. (Checkpoint 11 is left out: the
	// dump computes it from the edited set's last logits, which are the
	// two-block model's.)
	goSet := filepath.Join(t.TempDir(), "go")
	code, _, stderr = runCLI(t, "dump", "--model", fixture.FamilyModel(name), "--references", one, "--out", goSet)
	require.Equal(t, exitOK, code, stderr)
	code, out, stderr := runCLI(t, "run", "--model", fixture.FamilyModel(name), "--references", goSet, "--checkpoint", "1-10")
	require.Equal(t, exitOK, code, stderr)
	require.Regexp(t, `PASS: \d+ checks passed, 0 failed`, out)
	require.Contains(t, out, "layers:     the first block only (--layers 1), then the final norm and head")
	fixture.EditJSON(t, filepath.Join(one, references.ManifestFile), func(m map[string]any) {
		m["model"].(map[string]any)["layers"] = 3
	})
	code, _, stderr = runCLI(t, "run", "--model", fixture.FamilyModel(name), "--references", one)
	require.Equal(t, exitBadInput, code, stderr)
	require.Contains(t, stderr, "model.layers")
}

// TestGenerateChecksTokenizerFirst: --prompt on a model without a
// tokenizer is refused before the weights load (here they are not even
// safetensors), as are ids that are not ids.
func TestGenerateChecksTokenizerFirst(t *testing.T) {
	dir := fixture.CopyDir(t, fixture.FamilyModel("tiny-llama"))
	require.NoError(t, os.Remove(filepath.Join(dir, "tokenizer.gguf")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "model.safetensors"), []byte("not loaded"), 0o644))
	code, _, stderr := runCLI(t, "generate", "--model", dir, "--prompt", "Hello")
	require.Equal(t, exitBadInput, code, stderr)
	require.Contains(t, stderr, "give --tokens instead of --prompt")
	code, _, stderr = runCLI(t, "generate", "--model", dir, "--tokens", "1,x")
	require.Equal(t, exitBadInput, code, stderr)
	require.Contains(t, stderr, "--tokens")
}

// TestServeParsesTokenizerFirst: serve refuses a broken tokenizer before
// the weights load (here they are not even safetensors), and so parses it
// while the heap is small (tokenizerFirst).
func TestServeParsesTokenizerFirst(t *testing.T) {
	dir := fixture.CopyDir(t, fixture.FamilyModel("tiny-llama"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tokenizer.gguf"), []byte("GGUF broken"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "model.safetensors"), []byte("not loaded"), 0o644))
	code, _, stderr := runCLI(t, "serve", "--dry-run", "--model", dir)
	require.Equal(t, exitBadInput, code, stderr)
	require.Contains(t, stderr, "tokenizer.gguf")
	require.NotContains(t, stderr, "model.safetensors")
}
