package tokenizer

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/regularfile"
)

// sparse makes a file of size bytes that takes no disk space.
func sparse(t *testing.T, path string, size int64) string {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(size))
	require.NoError(t, f.Close())
	return path
}

// TestFileCaps: a tokenizer file beyond its cap is refused naming the
// file and the cap, before it is read (issue 43 item 6: a 10M-entry
// vocab.json took 0.94 GB and 14-30 s before its error).
func TestFileCaps(t *testing.T) {
	dir := t.TempDir()
	vocab, merges := "../testdata/gpt2-vocab/vocab.json", "../testdata/gpt2-vocab/merges.txt"
	tests := []struct {
		name string
		load func() error
		cap  int64
	}{
		{"tokenizer.json", func() error {
			_, err := LoadTokenizerJSON(sparse(t, filepath.Join(dir, "tokenizer.json"), regularfile.MaxTokenizerJSON+1))
			return err
		}, regularfile.MaxTokenizerJSON},
		{"vocab.json", func() error {
			_, err := LoadFiles(sparse(t, filepath.Join(dir, "vocab.json"), regularfile.MaxVocabJSON+1), merges)
			return err
		}, regularfile.MaxVocabJSON},
		{"merges.txt", func() error {
			_, err := LoadFiles(vocab, sparse(t, filepath.Join(dir, "merges.txt"), regularfile.MaxMergesTxt+1))
			return err
		}, regularfile.MaxMergesTxt},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.load()
			require.ErrorIs(t, err, regularfile.ErrTooLarge)
			assert.Contains(t, err.Error(), filepath.Join(dir, tc.name))
			assert.Contains(t, err.Error(), "more than the cap of")
		})
	}
}
