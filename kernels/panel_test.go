package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPanelOf: panelOf is the transpose by its definition, for panels of
// every height modulo its four-row step and widths from 1.
func TestPanelOf(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{1, 3, 4, 5, 8, 63, 64} {
		for _, cols := range []int{1, 7, 64, 129} {
			t.Run(fmt.Sprintf("%dx%d", n, cols), func(t *testing.T) {
				src := make([]uint16, n*cols)
				for i := range src {
					src[i] = uint16(rng.Uint32())
				}
				dst := make([]uint16, n*cols)
				panelOf(dst, n, cols, func(r int) []uint16 { return src[r*cols:] })
				for r := range n {
					for k := range cols {
						require.Equal(t, src[r*cols+k], dst[k*n+r], "row %d col %d", r, k)
					}
				}
			})
		}
	}
}

// BenchmarkPanelOf: one 64-row panel of a Qwen2.5-7B up projection
// (3584 wide), as a load makes 296 of a layer's.
func BenchmarkPanelOf(b *testing.B) {
	const n, cols = slab, 3584
	src := make([]uint16, n*cols)
	dst := make([]uint16, n*cols)
	b.SetBytes(int64(2 * len(src)))
	for b.Loop() {
		panelOf(dst, n, cols, func(r int) []uint16 { return src[r*cols:] })
	}
}

// BenchmarkPanelRowAtATime is the loop panelOf replaced, for the notes.
func BenchmarkPanelRowAtATime(b *testing.B) {
	const n, cols = slab, 3584
	src := make([]uint16, n*cols)
	dst := make([]uint16, n*cols)
	b.SetBytes(int64(2 * len(src)))
	for b.Loop() {
		for r := range n {
			for k, v := range src[r*cols : (r+1)*cols] {
				dst[k*n+r] = v
			}
		}
	}
}
