package chat

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/regularfile"
)

// TestFileCaps: a tokenizer_config.json or chat_template.jinja beyond its
// cap is refused naming the file and the cap, before it is read.
func TestFileCaps(t *testing.T) {
	grow := func(path string, size int64) {
		f, err := os.Create(path)
		require.NoError(t, err)
		require.NoError(t, f.Truncate(size))
		require.NoError(t, f.Close())
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "tokenizer_config.json")
	grow(cfg, regularfile.MaxTokenizerConfig+1)
	_, _, err := FromTokenizerConfig(cfg)
	require.ErrorIs(t, err, regularfile.ErrTooLarge)
	assert.Contains(t, err.Error(), cfg)
	assert.Contains(t, err.Error(), "cap of 67108864 (64 MiB)")

	require.NoError(t, os.WriteFile(cfg, []byte(`{"chat_template": "{{ messages[0].content }}"}`), 0o644))
	jinjaPath := filepath.Join(dir, TemplateFile)
	grow(jinjaPath, regularfile.MaxChatTemplate+1)
	_, _, err = FromTokenizerConfig(cfg)
	require.ErrorIs(t, err, regularfile.ErrTooLarge)
	assert.Contains(t, err.Error(), jinjaPath)
	assert.Contains(t, err.Error(), "cap of 1048576 (1 MiB)")
}
