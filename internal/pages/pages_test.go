package pages

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMake: buffers of every size come back zeroed, writable and of the
// length asked; a big one's pages are mapped in place (its contents and
// address stay what make gave).
func TestMake(t *testing.T) {
	for _, n := range []int{0, 1, 4095, Big/4 + 3, Big + 12345} {
		b := Make[float32](n)
		require.Len(t, b, n)
		for i, v := range b {
			require.Zero(t, v, "element %d of %d", i, n)
		}
		for i := range b {
			b[i] = float32(i)
		}
		for i, v := range b {
			require.Equal(t, float32(i), v)
		}
	}
}

// TestClone: the copy equals its source and does not share it; nil stays
// nil.
func TestClone(t *testing.T) {
	require.Nil(t, Clone[uint16](nil))
	src := make([]uint16, Big)
	for i := range src {
		src[i] = uint16(i * 7)
	}
	c := Clone(src)
	require.Equal(t, src, c)
	c[0]++
	require.NotEqual(t, src[0], c[0])
	require.Empty(t, Clone([]byte{}))
}
