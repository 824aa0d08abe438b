package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/references"
	"github.com/llorch/llorch-check/tokenizer"
	"github.com/stretchr/testify/require"
)

// sha256Files is model.tokenizer_sha256 computed here on its own: the
// files' bytes one after another.
func sha256Files(t *testing.T, paths ...string) string {
	t.Helper()
	h := sha256.New()
	for _, p := range paths {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// setTokenizer records a tokenizer in a copied set's manifest.
func setTokenizer(t *testing.T, refs, file, sha string) {
	t.Helper()
	fixture.EditJSON(t, filepath.Join(refs, "manifest.json"), func(m map[string]any) {
		model := m["model"].(map[string]any)
		model["tokenizer_file"], model["tokenizer_sha256"] = file, sha
	})
}

// TestTokenizerMismatchRefusedBeforeLoad: a set made with another
// tokenizer is bad input (exit 2) naming both files and hashes, and the
// weights are never loaded: the model's weights file is garbage, and the
// error is still the tokenizer's. With the right hash the same command
// goes on to the weights and fails on them instead.
func TestTokenizerMismatchRefusedBeforeLoad(t *testing.T) {
	other := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		family, tokFile string
		tokPaths        []string // the model directory's tokenizer files, relative
	}{
		{"tiny-llama", "tokenizer.gguf", []string{"tokenizer.gguf"}},
		{"tiny-llama-phi3", "tokenizer.gguf", []string{"tokenizer.gguf"}},
		{"tiny-gpt2", "vocab.json", []string{"vocab.json", "merges.txt"}},
	} {
		for _, command := range []string{"run", "bisect", "dump"} {
			t.Run(tc.family+"/"+command, func(t *testing.T) {
				model := fixture.CopyDir(t, fixture.FamilyModel(tc.family))
				refs := fixture.CopyDir(t, fixture.FamilyReferences(tc.family))
				require.NoError(t, os.WriteFile(filepath.Join(model, "model.safetensors"), []byte("not safetensors"), 0o644))
				var paths []string
				for _, p := range tc.tokPaths {
					paths = append(paths, filepath.Join(model, p))
				}
				have := sha256Files(t, paths...)
				args := []string{command, "--model", model, "--references", refs}
				if command == "dump" {
					args = append(args, "--out", filepath.Join(t.TempDir(), "out"))
				}

				setTokenizer(t, refs, "tokenizer.json", other)
				code, stdout, stderr := runCLI(t, args...)
				require.Equal(t, exitBadInput, code, "stdout: %s\nstderr: %s", stdout, stderr)
				require.Contains(t, stderr, "tokenizer does not match the reference set")
				require.Contains(t, stderr, strings.Join(paths, " + "))
				require.Contains(t, stderr, have)
				require.Contains(t, stderr, "made with tokenizer.json, sha256 "+other)
				require.NotContains(t, stderr, "safetensors", "the weights were not loaded")
				require.Empty(t, stdout)

				setTokenizer(t, refs, tc.tokFile, have)
				code, _, stderr = runCLI(t, args...)
				require.Equal(t, exitBadInput, code)
				require.NotContains(t, stderr, "tokenizer does not match")
				require.Contains(t, stderr, "model.safetensors", "past the tokenizer check, the weights load")
			})
		}
	}
}

// TestTokenizerCheckSkips: nothing to compare passes, as sets did before
// the field: a set that records no tokenizer, and a model directory
// without one.
func TestTokenizerCheckSkips(t *testing.T) {
	model := fixture.CopyDir(t, fixture.FamilyModel("tiny-llama"))
	refs := fixture.CopyDir(t, fixture.FamilyReferences("tiny-llama"))
	fixture.EditJSON(t, filepath.Join(refs, "manifest.json"), func(m map[string]any) {
		model := m["model"].(map[string]any)
		delete(model, "tokenizer_file")
		delete(model, "tokenizer_sha256")
	})
	code, _, stderr := runCLI(t, "run", "--model", model, "--references", refs, "--checkpoint", "7")
	require.Equal(t, exitOK, code, stderr)

	refs = fixture.CopyDir(t, fixture.FamilyReferences("tiny-llama"))
	setTokenizer(t, refs, "tokenizer.json", strings.Repeat("ab", 32))
	require.NoError(t, os.Remove(filepath.Join(model, "tokenizer.gguf")))
	code, _, stderr = runCLI(t, "run", "--model", model, "--references", refs, "--checkpoint", "7")
	require.Equal(t, exitOK, code, stderr)
}

// TestProbeTokenizerMismatch: probe compares texts through --model's
// tokenizer, so a set made with another is refused before any request.
func TestProbeTokenizerMismatch(t *testing.T) {
	refs := fixture.CopyDir(t, fixture.FamilyReferences("tiny-llama"))
	setTokenizer(t, refs, "tokenizer.json", strings.Repeat("ab", 32))
	code, _, stderr := runCLI(t, "probe", "--endpoint", "http://127.0.0.1:1", "--references", refs,
		"--model", fixture.FamilyModel("tiny-llama"))
	require.Equal(t, exitBadInput, code, stderr)
	require.Contains(t, stderr, "tokenizer does not match the reference set")
}

// TestBadTokenizerFieldsInvalid: the two fields come together, a file
// name and 64 hex digits.
func TestBadTokenizerFieldsInvalid(t *testing.T) {
	for _, tc := range []struct{ file, sha, want string }{
		{"", strings.Repeat("ab", 32), "model.tokenizer_file"},
		{"../tokenizer.json", strings.Repeat("ab", 32), "model.tokenizer_file"},
		{"tokenizer.json", "abc", "model.tokenizer_sha256"},
	} {
		refs := fixture.CopyDir(t, fixture.FamilyReferences("tiny-llama"))
		setTokenizer(t, refs, tc.file, tc.sha)
		code, _, stderr := runCLI(t, "run", "--model", fixture.FamilyModel("tiny-llama"), "--references", refs)
		require.Equal(t, exitBadInput, code, stderr)
		require.Contains(t, stderr, tc.want)
	}
}

// TestCommittedSetsRecordTheirTokenizer: every committed set names its
// model's tokenizer (make references writes it), hashed as Go hashes it,
// so run's check is exercised on each rather than skipped as for an old set.
func TestCommittedSetsRecordTheirTokenizer(t *testing.T) {
	sets := map[string]string{"tiny-gpt2": "tiny-gpt2", "tiny-gpt2-f16kv": "tiny-gpt2", "tiny-llama-qwen2-f16kv": "tiny-llama-qwen2"}
	for _, name := range fixture.Families {
		sets[name] = name
	}
	for set, model := range sets {
		t.Run(set, func(t *testing.T) {
			s, err := references.Open(fixture.FamilyReferences(set))
			require.NoError(t, err)
			name, paths, err := tokenizer.Source(fixture.FamilyModel(model))
			require.NoError(t, err)
			require.Equal(t, name, s.Manifest.Model.TokenizerFile)
			require.Len(t, s.Manifest.Model.TokenizerSHA256, 64)
			require.NoError(t, s.CheckTokenizer(name, paths))
		})
	}
}
