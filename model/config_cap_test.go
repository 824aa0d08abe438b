package model

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/regularfile"
)

// TestConfigCap: a config.json beyond 16 MiB is refused naming the file
// and the cap before it is read (issue 43 item 6: a 300 MB one loaded,
// at 1.43 GB of RSS).
func TestConfigCap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	f, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(regularfile.MaxConfigJSON+1))
	require.NoError(t, f.Close())
	_, err = LoadConfig(path)
	require.ErrorIs(t, err, regularfile.ErrTooLarge)
	assert.Contains(t, err.Error(), path)
	assert.Contains(t, err.Error(), "cap of 16777216 (16 MiB)")
}
