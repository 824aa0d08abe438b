package regularfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadFileMax: a file at its cap reads whole; one byte more is an
// error naming the file and the cap.
func TestReadFileMax(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")
	require.NoError(t, os.WriteFile(path, []byte(strings.Repeat("x", 1024)), 0o644))
	b, err := ReadFileMax(path, 1024)
	require.NoError(t, err)
	assert.Len(t, b, 1024)

	_, err = ReadFileMax(path, 1023)
	require.ErrorIs(t, err, ErrTooLarge)
	assert.Contains(t, err.Error(), path)
	assert.Contains(t, err.Error(), "1024 bytes, more than the cap of 1023")

	_, err = ReadFileMax(filepath.Join(dir, "absent"), 1)
	require.ErrorIs(t, err, os.ErrNotExist)
}
