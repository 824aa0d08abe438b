package references

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBesideModel(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"tiny", "references/tiny", "references/q8", "references/tiny-f16kv", "other"} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, d), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(root, "q8.gguf"), nil, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "references", "file"), nil, 0o644))
	for _, tc := range []struct {
		model, want string
		ok          bool
	}{
		{"tiny", "references/tiny", true},
		{"tiny/", "references/tiny", true},
		{"q8.gguf", "references/q8", true},
		{"other", "references/other", false},
		{"file", "references/file", false}, // a file is not a set
	} {
		got, ok := BesideModel(filepath.Join(root, tc.model))
		assert.Equal(t, filepath.Join(root, tc.want), got, tc.model)
		assert.Equal(t, tc.ok, ok, tc.model)
	}
	assert.Equal(t, filepath.Join(root, "references", "tiny-f16kv"), F16KVTwin(filepath.Join(root, "references", "tiny")))
	assert.Equal(t, filepath.Join(root, "references", "q8"), F16KVTwin(filepath.Join(root, "references", "q8")))
}
