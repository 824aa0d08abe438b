package kvcache

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRelease: a cache of a FreeBehindWindow pool gives back the blocks
// wholly before the position released, never the one the next position
// falls in; its promise to the pool falls to the blocks it still holds
// unless its reservation is larger; another cache can then reserve the
// room. Without the option Release does nothing.
func TestRelease(t *testing.T) {
	const B = 4
	for _, tc := range []struct {
		name              string
		free              bool
		reserve, release  int
		start, held, room int // Start, blocks held, blocks another cache can reserve (of 4)
	}{
		{"kept without the option", false, 0, 8, 0, 3, 1},
		{"two blocks given back", true, 0, 8, 8, 1, 3},
		{"a block's middle keeps it", true, 0, 7, 4, 2, 2},
		{"past Len: up to Len", true, 0, 40, 12, 0, 4},
		{"a reservation stands", true, 16, 8, 8, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPool(t, Options{BlockTokens: B, MaxTokens: 4 * B, FreeBehindWindow: tc.free})
			c := p.NewCache()
			if tc.reserve > 0 {
				require.NoError(t, c.Reserve(tc.reserve))
			}
			seq := testTokens(12, 1)
			require.NoError(t, write(c, seq, len(seq)))
			c.Release(tc.release)
			require.Equal(t, tc.start, c.Start())
			require.Equal(t, tc.held, p.Stats().HeldBlocks)
			require.Equal(t, int64(tc.held)*p.BlockBytes(), c.Bytes())
			requireSameAsAlone(t, c, seq, tc.name)
			if tc.start > 0 {
				k, v := c.Snapshot(0)
				require.Nil(t, k, "a snapshot of a cache missing positions")
				require.Nil(t, v)
			}
			other := p.NewCache()
			if tc.room > 0 {
				require.NoError(t, other.Reserve(tc.room*B))
			}
			require.ErrorIs(t, other.Reserve((tc.room+1)*B), ErrFull)
			other.Close()
			// The sequence goes on from its Start: a step writes, a
			// full block past a given-back one is not indexed, and
			// Reset gives everything back.
			seq = append(seq, 5)
			require.NoError(t, write(c, seq, 1))
			requireSameAsAlone(t, c, seq, tc.name+", a step on")
			c.Close()
			require.Zero(t, p.Stats().HeldBlocks)
			require.Zero(t, p.reserved)
		})
	}
}

// TestReleasedPrefixStaysFindable: in a prefix-caching pool a block given
// back is kept and found again, with its keys and values, by a prompt
// with the same start; the blocks the sequence fills after it are not
// indexed (their parent is gone from the sequence), so no prompt is handed
// a run of blocks with a hole in it.
func TestReleasedPrefixStaysFindable(t *testing.T) {
	const B = 4
	p := newPool(t, Options{BlockTokens: B, MaxTokens: 16 * B, PrefixCache: true, FreeBehindWindow: true})
	a := p.NewCache()
	seq := testTokens(8, 3)
	require.NoError(t, write(a, seq, len(seq)))
	a.Release(8)
	require.Equal(t, 2, p.Stats().IdleBlocks, "the two given-back blocks are kept for reuse")
	for range 2 * B {
		seq = append(seq, 7)
		require.NoError(t, write(a, seq, 1))
	}
	b := p.NewCache()
	require.Equal(t, 8, b.ReusePrefix(append(seq[:16:16], 9)), "only the blocks before the release are found")
	requireSameAsAlone(t, b, seq[:8], "the reused prefix")
}
