package references

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTensorChunks: a tensor read a chunk at a time is Tensor and
// TensorF64 in order, for chunk sizes that divide it, do not, and exceed
// it; and its files are checked as Tensor checks them.
func TestTensorChunks(t *testing.T) {
	s := withTwins(t, writeSet(t, validManifest()))
	for _, ti := range s.Manifest.Tensors {
		want, err := s.Tensor(ti)
		require.NoError(t, err)
		truth, err := s.TensorF64(ti)
		require.NoError(t, err)
		for _, chunk := range []int{1, 3, 5, len(want), len(want) + 9} {
			var got []float32
			var got64 []float64
			var offs []int
			err := s.TensorChunks(ti, chunk, func(off int, w []float32, tr []float64) error {
				offs = append(offs, off)
				got, got64 = append(got, w...), append(got64, tr...)
				return nil
			})
			require.NoError(t, err, "%s chunk %d", ti.Key(), chunk)
			require.Equal(t, want, got, "%s chunk %d", ti.Key(), chunk)
			require.Equal(t, truth, got64, "%s chunk %d", ti.Key(), chunk)
			require.Equal(t, (len(want)+chunk-1)/chunk, len(offs))
			require.True(t, slices.IsSorted(offs))
		}
	}

	ti := s.Manifest.Tensors[0]
	path := filepath.Join(s.Dir, ti.File)
	require.NoError(t, os.WriteFile(path, rawNPY("<f4", []int{2, 4}, f32bytes(values([]int{2, 4}))), 0o644))
	err := s.TensorChunks(ti, 2, func(int, []float32, []float64) error { return nil })
	require.ErrorIs(t, err, ErrInvalid)
	require.ErrorContains(t, err, path+": shape [2 4], the manifest says [3 4]")

	require.ErrorContains(t, s.TensorChunks(ti, 0, nil), "chunk 0")
}
