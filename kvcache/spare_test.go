package kvcache

import (
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// An ended block's memory is the next block's, never more of it than the
// pool's peak, and it is given back once it has waited the linger.
func TestSpareBlocks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		linger time.Duration
		spares int // after the first sequence ends
	}{
		{"kept", time.Hour, 3},
		{"given back at once", -1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPool(t, Options{BlockTokens: 4, SpareLinger: tc.linger})
			a := p.NewCache()
			run(t, a, testTokens(9, 1), nil)
			mem := blockAddrs(a)
			a.Reset()
			st := p.Stats()
			require.Equal(t, [3]int{0, tc.spares, 3}, [3]int{st.HeldBlocks, st.SpareBlocks, st.PeakBlocks})

			b := p.NewCache()
			run(t, b, testTokens(5, 2), nil)
			st = p.Stats()
			require.Equal(t, [3]int{2, max(tc.spares-2, 0), 3}, [3]int{st.HeldBlocks, st.SpareBlocks, st.PeakBlocks})
			if tc.spares == 0 {
				return // (a fresh mapping may land where an unmapped one was: addresses prove nothing)
			}
			reused := 0
			for addr := range blockAddrs(b) {
				if mem[addr] {
					reused++
				}
			}
			require.Equal(t, 2, reused, "blocks on an ended sequence's memory")
		})
	}

	p := newPool(t, Options{BlockTokens: 4, SpareLinger: 20 * time.Millisecond})
	c := p.NewCache()
	run(t, c, testTokens(9, 1), nil)
	c.Close()
	require.Equal(t, 3, p.Stats().SpareBlocks)
	require.Eventually(t, func() bool { return p.Stats().SpareBlocks == 0 }, 5*time.Second, 5*time.Millisecond,
		"spares never given back")
	require.Equal(t, Stats{BlockTokens: 4, BlockBytes: p.BlockBytes(), PeakBlocks: 3}, p.Stats())
}

func blockAddrs(c *Cache) map[uintptr]bool {
	addrs := map[uintptr]bool{}
	for _, b := range c.seq.blocks {
		if b.f32 != nil {
			addrs[uintptr(unsafe.Pointer(&b.f32[0]))] = true
		} else {
			addrs[uintptr(unsafe.Pointer(&b.f16[0]))] = true
		}
	}
	return addrs
}
