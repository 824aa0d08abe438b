package kernels

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTranspose: the tiled transpose is the transpose, at shapes that
// leave partial tiles on both sides, and bands shared out over the cores
// (a million elements and more), the last band partial.
func TestTranspose(t *testing.T) {
	for _, s := range []struct{ rows, cols int }{{1, 5}, {33, 1}, {37, 70}, {64, 96}, {1000, 1100}, {3072, 768}} {
		src := make([]float32, s.rows*s.cols)
		for i := range src {
			src[i] = float32(i)
		}
		got := Transpose(src, s.rows, s.cols)
		for r := range s.rows {
			for c := range s.cols {
				require.Equal(t, src[r*s.cols+c], got[c*s.rows+r], "%dx%d (%d,%d)", s.rows, s.cols, r, c)
			}
		}
	}
}
