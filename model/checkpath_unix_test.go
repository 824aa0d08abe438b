//go:build unix

package model

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/internal/regularfile"
	"github.com/stretchr/testify/require"
)

// TestCheckPath: a directory, a regular file and what is missing pass (the
// loader names what is missing); a named pipe as the path or as an HF
// directory's config.json is refused, without opening it.
func TestCheckPath(t *testing.T) {
	dir := t.TempDir()
	hf := filepath.Join(dir, "hf")
	require.NoError(t, os.Mkdir(hf, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(hf, "config.json"), []byte("{}"), 0o644))
	bare := filepath.Join(dir, "bare")
	require.NoError(t, os.Mkdir(bare, 0o755))
	file := filepath.Join(dir, "m.gguf")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	pipe := filepath.Join(dir, "pipe.gguf")
	fixture.FIFO(t, pipe)
	hfPipe := filepath.Join(dir, "hf-pipe")
	require.NoError(t, os.Mkdir(hfPipe, 0o755))
	fixture.FIFO(t, filepath.Join(hfPipe, "config.json"))
	for _, c := range []struct {
		name, path, err string
	}{
		{"HF directory", hf, ""},
		{"directory without config.json", bare, ""},
		{"file", file, ""},
		{"missing", filepath.Join(dir, "absent"), ""},
		{"named pipe", pipe, pipe},
		{"named pipe config.json", hfPipe, filepath.Join(hfPipe, "config.json")},
	} {
		err := CheckPath(c.path)
		if c.err == "" {
			require.NoError(t, err, c.name)
			continue
		}
		require.ErrorIs(t, err, regularfile.ErrNotRegular, c.name)
		require.ErrorContains(t, err, c.err, c.name)
	}
}
