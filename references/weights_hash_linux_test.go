package references

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/weights"
)

// settled waits past the coarse clock's tick that stamps change times,
// with weights.RacyMargin at zero, so that files just written count as
// settled; the margin is restored after the test.
func settled(t *testing.T) {
	t.Helper()
	old := weights.RacyMargin
	weights.RacyMargin = 0
	t.Cleanup(func() { weights.RacyMargin = old })
	time.Sleep(50 * time.Millisecond)
}

// TestWeightsSHA256Identity: a hash is vouched for by the files' identity
// only when they last changed RacyMargin before it began; a new process
// recalls it by that identity without hashing, until a file is written
// in place, even at the same size and modification time, or a shard of
// an index is.
func TestWeightsSHA256Identity(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "model.safetensors")
	require.NoError(t, os.WriteFile(path, []byte(testWeights), 0o644))

	// Just written: the sum, but no identity to record with it.
	ForgetWeightsSHA256()
	sum, id, err := WeightsSHA256Identity(path)
	require.NoError(t, err)
	require.Equal(t, testSHA, sum)
	require.Empty(t, id, "a file changed %v ago vouches for nothing", weights.RacyMargin)
	require.False(t, RecallWeightsSHA256(path, "", sum))

	settled(t)
	ForgetWeightsSHA256() // another process
	sum, id, err = WeightsSHA256Identity(path)
	require.NoError(t, err)
	require.Equal(t, testSHA, sum)
	want, _, err := weights.Identity(path)
	require.NoError(t, err)
	require.Equal(t, want, id)

	ForgetWeightsSHA256()
	hashes := HashesTaken()
	require.True(t, RecallWeightsSHA256(path, id, sum))
	got, err := WeightsSHA256(path)
	require.NoError(t, err)
	require.Equal(t, testSHA, got)
	require.Equal(t, hashes, HashesTaken(), "a recalled hash is not taken again")

	// Written in place at the same size and modification time: the
	// change time moved, the recalled hash is refused and taken again.
	st, err := os.Stat(path)
	require.NoError(t, err)
	other := []byte(testWeights)
	other[0] ^= 1
	require.NoError(t, os.WriteFile(path, other, 0o644))
	require.NoError(t, os.Chtimes(path, st.ModTime(), st.ModTime()))
	ForgetWeightsSHA256()
	require.False(t, RecallWeightsSHA256(path, id, sum))
	got, err = WeightsSHA256(path)
	require.NoError(t, err)
	require.Equal(t, StringSHA256(string(other)), got)
	require.Equal(t, hashes+1, HashesTaken())

	// An index: its identity covers every shard.
	shards := t.TempDir()
	index := filepath.Join(shards, "model.safetensors.index.json")
	require.NoError(t, os.WriteFile(index, []byte(`{"weight_map": {"a": "one.safetensors", "b": "two.safetensors"}}`), 0o644))
	for _, s := range []string{"one", "two"} {
		require.NoError(t, os.WriteFile(filepath.Join(shards, s+".safetensors"), []byte(s), 0o644))
	}
	time.Sleep(50 * time.Millisecond)
	sum, id, err = WeightsSHA256Identity(index)
	require.NoError(t, err)
	require.NotEmpty(t, id)
	require.True(t, RecallWeightsSHA256(index, id, sum))
	require.NoError(t, os.WriteFile(filepath.Join(shards, "two.safetensors"), []byte("owt"), 0o644))
	require.False(t, RecallWeightsSHA256(index, id, sum), "a shard rewritten at the same size")
}
