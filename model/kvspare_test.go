package model

import (
	"math"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// An ended block's memory is the next block's, never more of it than the
// pool's peak, and it is given back once it has waited the linger.
func TestSpareBlocks(t *testing.T) {
	m, _ := testModel(t)
	for _, tc := range []struct {
		name   string
		linger time.Duration
		spares int // after the first sequence ends
	}{
		{"kept", time.Hour, 3},
		{"given back at once", -1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPool(t, m, KVCacheOptions{BlockTokens: 4, SpareLinger: tc.linger})
			a := p.NewCache()
			run(t, m, a, testTokens(9, 1), nil)
			mem := blockAddrs(a)
			a.Reset()
			st := p.Stats()
			require.Equal(t, [3]int{0, tc.spares, 3}, [3]int{st.HeldBlocks, st.SpareBlocks, st.PeakBlocks})

			b := p.NewCache()
			run(t, m, b, testTokens(5, 2), nil)
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

	p := newPool(t, m, KVCacheOptions{BlockTokens: 4, SpareLinger: 20 * time.Millisecond})
	c := p.NewCache()
	run(t, m, c, testTokens(9, 1), nil)
	c.Close()
	require.Equal(t, 3, p.Stats().SpareBlocks)
	require.Eventually(t, func() bool { return p.Stats().SpareBlocks == 0 }, 5*time.Second, 5*time.Millisecond,
		"spares never given back")
	require.Equal(t, KVStats{BlockTokens: 4, BlockBytes: p.BlockBytes(), PeakBlocks: 3}, p.Stats())
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

// A spare's stale contents are never read: blocks on memory full of NaN
// give the bits of fresh ones, in float32 and float16, for a prefill, the
// steps after it and a prefix reused from a kept block.
func TestSpareContentsNeverRead(t *testing.T) {
	for _, tm := range pagedModels(t) {
		for _, f16 := range []bool{false, true} {
			t.Run(tm.name, func(t *testing.T) {
				m := tm.m
				prompt, steps := tokensFor(m, 23, 9), tokensFor(m, 7, 10)
				opt := KVCacheOptions{BlockTokens: 8, Float16: f16, SpareLinger: -1}
				want := run(t, m, newPool(t, m, opt).NewCache(), prompt, steps)

				opt.SpareLinger = time.Hour
				p := newPool(t, m, opt)
				stale := p.NewCache()
				run(t, m, stale, tokensFor(m, 40, 11), nil)
				for _, b := range stale.seq.blocks {
					for i := range b.f32 {
						b.f32[i] = float32(math.NaN())
					}
					for i := range b.f16 {
						b.f16[i] = 0x7e00 // a float16 NaN
					}
				}
				stale.Close()
				require.Equal(t, 5, p.Stats().SpareBlocks)
				require.Equal(t, want, run(t, m, p.NewCache(), prompt, steps))
				require.Equal(t, 1, p.Stats().SpareBlocks, "4 blocks on spares")
			})
		}
	}
}
