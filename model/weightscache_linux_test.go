package model

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/references"
	"github.com/llorch/llorch-check/weights"
)

// TestWeightsCacheRecallsHash: a cached load of weights unchanged since
// they were hashed takes their sha256 from the record beside the cache
// and reads none of their bytes to hash them (a new process each time,
// as ForgetWeightsSHA256 makes it); weights written in place at the same
// size and modification time are hashed again, and the changed bytes
// rewrite the cache.
func TestWeightsCacheRecallsHash(t *testing.T) {
	old := weights.RacyMargin
	weights.RacyMargin = 0 // the file below is new; its change time must count as settled
	t.Cleanup(func() { weights.RacyMargin = old })
	gpt2, _ := testModel(t)
	path := filepath.Join(t.TempDir(), "m.gguf")
	img := ggufImage(t, gpt2, gguf.GGMLTypeQ8_0, nil)
	require.NoError(t, os.WriteFile(path, img, 0o644))
	time.Sleep(50 * time.Millisecond) // past the tick of the coarse clock that stamps change times
	dir := t.TempDir()
	load := func(want string) {
		t.Helper()
		references.ForgetWeightsSHA256()
		m, err := LoadWith(path, LoadOptions{WeightsCache: dir})
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(m.WeightsCache, want), m.WeightsCache)
	}

	hashes := references.HashesTaken()
	load("written to ")
	require.Equal(t, hashes+1, references.HashesTaken())
	matches, err := filepath.Glob(filepath.Join(dir, "*.weights.sha256"))
	require.NoError(t, err)
	require.Len(t, matches, 1)
	load("read from ")
	load("read from ")
	require.Equal(t, hashes+1, references.HashesTaken(), "cached loads recall the hash")

	st, err := os.Stat(path)
	require.NoError(t, err)
	img[len(img)-1] ^= 0x01 // the last tensor's last byte: still a valid file
	require.NoError(t, os.WriteFile(path, img, 0o644))
	require.NoError(t, os.Chtimes(path, st.ModTime(), st.ModTime()))
	time.Sleep(50 * time.Millisecond)
	load("written to ")
	require.Equal(t, hashes+2, references.HashesTaken())
	load("read from ")
	require.Equal(t, hashes+2, references.HashesTaken())
}
