package tokenizer

import (
	"path/filepath"
	"testing"

	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/stretchr/testify/require"
)

// TestSource names the files Load reads, in its order: a reference set
// records and compares the hash of exactly these
// (model.tokenizer_sha256).
func TestSource(t *testing.T) {
	spm := filepath.Join(fixture.Root(), "testdata", "tokenizer", "llama-spm", "ggml-vocab-llama-spm.gguf")
	mistral := filepath.Join(fixture.Root(), "testdata", "tokenizer", "mistral-hf", "tokenizer.json")
	tests := []struct {
		name  string
		files map[string]string // name in the directory -> source
		want  string
		paths []string
	}{
		{"vocab pair first", map[string]string{"vocab.json": vocabJSON, "merges.txt": mergesTxt, "tokenizer.json": mistral},
			"vocab.json", []string{"vocab.json", "merges.txt"}},
		{"tokenizer.json before GGUF", map[string]string{"tokenizer.json": mistral, "tokenizer.gguf": spm},
			"tokenizer.json", []string{"tokenizer.json"}},
		{"first GGUF with tokens by name", map[string]string{"b.gguf": spm, "c.gguf": spm, "vocab.json": vocabJSON},
			"b.gguf", []string{"b.gguf"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, src := range tc.files {
				fixture.CopyFile(t, src, filepath.Join(dir, name))
			}
			name, paths, err := Source(dir)
			require.NoError(t, err)
			require.Equal(t, tc.want, name)
			var want []string
			for _, p := range tc.paths {
				want = append(want, filepath.Join(dir, p))
			}
			require.Equal(t, want, paths)
		})
	}
	_, _, err := Source(t.TempDir())
	require.ErrorIs(t, err, ErrNoTokenizer)
}
