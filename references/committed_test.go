package references

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// The project's default reference set and model are committed; a set that
// no longer opens, or no longer matches the weights, must fail CI rather
// than be skipped.
const (
	committedSet     = "../testdata/references/tiny-gpt2"
	committedWeights = "../testdata/tiny-gpt2/model.safetensors"
)

func TestCommittedSet(t *testing.T) {
	require.DirExists(t, committedSet, "the committed reference set is missing; regenerate it with `make references`")
	s, err := Open(committedSet)
	require.NoError(t, err)
	require.NoError(t, s.CheckWeights(committedWeights))

	dims, err := s.Manifest.ModelConfig()
	require.NoError(t, err)
	require.Positive(t, dims.NLayer)
	for _, ti := range s.Manifest.Tensors {
		got, err := s.Tensor(ti)
		require.NoError(t, err, ti.Key())
		n, _ := numElems(ti.Shape, 4)
		require.Len(t, got, n, ti.Key())
		require.NotNil(t, ti.FileF64, "%s: the committed set has float64 twins", ti.Key())
		twin, err := s.TensorF64(ti)
		require.NoError(t, err, ti.Key())
		require.Len(t, twin, n, ti.Key())
	}
}

// TestCommittedSetFiles: every file in the committed set is listed in its
// manifest, so stale files from an older generator do not linger.
func TestCommittedSetFiles(t *testing.T) {
	s, err := Open(committedSet)
	require.NoError(t, err)
	listed := map[string]bool{ManifestFile: true}
	for _, ti := range s.Manifest.Tensors {
		listed[ti.File] = true
		listed[*ti.FileF64] = true
	}
	err = filepath.WalkDir(committedSet, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(committedSet, path)
		require.NoError(t, err)
		require.True(t, listed[filepath.ToSlash(rel)], "%s is not listed in the manifest", rel)
		return nil
	})
	require.NoError(t, err)
}
