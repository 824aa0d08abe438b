package kvcache

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// A cache holds the blocks of the positions it has, and gives them back.
func TestCacheMemoryFollowsTokens(t *testing.T) {
	p := newPool(t, Options{BlockTokens: 4, SpareLinger: -1}) // memory given back at once (spare_test.go: kept a while)
	a, b := p.NewCache(), p.NewCache()
	run(t, a, testTokens(9, 1), nil)
	require.Equal(t, 3, p.Stats().HeldBlocks, "9 positions in blocks of 4")
	require.Equal(t, 3*p.BlockBytes(), a.Bytes())
	run(t, b, testTokens(4, 2), []int{5})
	require.Equal(t, 5, p.Stats().HeldBlocks)
	require.NoError(t, a.Truncate(4))
	require.Equal(t, 3, p.Stats().HeldBlocks)
	a.Reset()
	require.Equal(t, 2, p.Stats().HeldBlocks)
	b.Close()
	require.Equal(t, Stats{BlockTokens: 4, BlockBytes: p.BlockBytes(), PeakBlocks: 5}, p.Stats(), "nothing held, 5 blocks at most")
	require.Equal(t, int64(2*2*2*4*8*4), p.BlockBytes(), "2 layers × K,V × 2 heads × 4 positions × 8 dims × float32")
}

// A bounded pool promises blocks to reservations, refuses what it cannot
// promise, and evicts kept blocks least recently used first.
func TestPoolBound(t *testing.T) {
	p := newPool(t, Options{BlockTokens: 4, MaxTokens: 16})
	a, b := p.NewCache(), p.NewCache()
	require.NoError(t, a.Reserve(12))
	require.ErrorIs(t, b.Reserve(8), ErrFull)
	require.NoError(t, b.Reserve(4))
	err := write(b, testTokens(5, 1), 5)
	require.ErrorIs(t, err, ErrFull, "a block past b's reservation would break a's")
	require.Equal(t, 0, b.Len(), "a failed Grow leaves the cache's positions as they were")
	run(t, a, testTokens(12, 2), nil)
	run(t, b, testTokens(4, 3), nil)
	require.Equal(t, 4, p.Stats().HeldBlocks)
	a.Close()
	require.NoError(t, b.Reserve(16), "a's blocks are back")

	kept := newPool(t, Options{BlockTokens: 4, MaxTokens: 16, PrefixCache: true})
	c := kept.NewCache()
	run(t, c, testTokens(16, 4), nil)
	c.Reset()
	require.Equal(t, 4, kept.Stats().IdleBlocks)
	run(t, c, testTokens(8, 5), nil)
	s := kept.Stats()
	require.Equal(t, [3]int64{4, 2, 2}, [3]int64{int64(s.HeldBlocks), int64(s.IdleBlocks), s.Evictions})
	c.Reset()
	require.Equal(t, 4, kept.NewCache().ReusePrefix(append(testTokens(16, 4)[:4], 1, 2)),
		"a prefix's tail is evicted before its head")
}

// PrefixCacheTokens bounds what is kept for reuse: an idle pool holds
// that much, a prefix's head rather than its tail.
func TestPoolKeepsBoundedPrefix(t *testing.T) {
	p := newPool(t, Options{BlockTokens: 4, MaxTokens: 32, PrefixCache: true, PrefixCacheTokens: 8})
	c := p.NewCache()
	prompt := testTokens(18, 6)
	run(t, c, prompt, nil)
	c.Reset()
	s := p.Stats()
	require.Equal(t, [3]int64{2, 2, 2}, [3]int64{int64(s.HeldBlocks), int64(s.IdleBlocks), s.Evictions},
		"4 full blocks, 2 kept, the partial one freed")
	require.Equal(t, 8, p.NewCache().ReusePrefix(prompt), "the first two blocks were kept")
}

func TestPoolOptions(t *testing.T) {
	for _, tc := range []struct {
		opt  Options
		want string
	}{
		{Options{BlockTokens: 6}, "block of 6 positions: must be a positive multiple of 4"},
		{Options{BlockTokens: -4}, "block of -4 positions"},
		{Options{MaxTokens: -1}, "KV cache of -1 positions"},
		{Options{MaxTokens: 8, PrefixCache: true, PrefixCacheTokens: -4}, "-4 kept for reuse: must not be negative"},
		{Options{PrefixCache: true}, "without a bound"},
	} {
		_, err := NewPool(testShape, tc.opt)
		require.ErrorContains(t, err, tc.want, fmt.Sprint(tc.opt))
	}
}

// TestPoolRandomOps drives a bounded prefix-caching pool through random
// sequences of what a server does (reserve, prefill with reuse, steps,
// truncate, reset, close) and checks after every operation that the
// pool's accounting matches the caches (blocks held, promised, kept) and
// that every cache's keys and values are those of writing its tokens
// from scratch.
func TestPoolRandomOps(t *testing.T) {
	for _, free := range []bool{false, true} {
		t.Run(fmt.Sprintf("FreeBehindWindow=%v", free), func(t *testing.T) { poolRandomOps(t, free) })
	}
}

// poolRandomOps runs random operations on the caches of one pool; with
// free, some give back the blocks before a position (Release, as a model
// whose every layer has a window does), and the pool's books, its bound
// and every cache's contents from its Start on must hold all the same.
func poolRandomOps(t *testing.T, free bool) {
	const B, maxTok = 4, 64
	p := newPool(t, Options{BlockTokens: B, MaxTokens: maxTok, PrefixCache: true, PrefixCacheTokens: 24, FreeBehindWindow: free})
	type seq struct {
		c      *Cache
		tokens []int
	}
	seqs := make([]*seq, 4)
	for i := range seqs {
		seqs[i] = &seq{c: p.NewCache()}
	}
	r := rand.New(rand.NewPCG(77, 78))
	peak := 0
	// Prompts draw from a few shared stems so that prefixes repeat.
	stems := [][]int{testTokens(20, 90), testTokens(20, 91)}
	check := func(step int, op string) {
		t.Helper()
		held, promised := map[*kvBlock]bool{}, 0
		for _, s := range seqs {
			for i, b := range s.c.seq.blocks {
				require.Equal(t, i < s.c.seq.gone, b == nil, "step %d %s: block %d of %d given back", step, op, i, s.c.seq.gone)
				if b != nil {
					held[b] = true
				}
			}
			promised += max(s.c.seq.reservation, s.c.seq.live())
			require.Equal(t, len(s.tokens), s.c.Len(), "step %d %s", step, op)
			require.Equal(t, p.blocksFor(s.c.Len()), len(s.c.seq.blocks), "step %d %s: blocks past the positions", step, op)
		}
		st := p.Stats()
		require.Equal(t, len(held)+st.IdleBlocks, st.HeldBlocks, "step %d %s: blocks held", step, op)
		require.Equal(t, promised, p.reserved, "step %d %s: blocks promised", step, op)
		require.LessOrEqual(t, st.HeldBlocks, maxTok/B, "step %d %s", step, op)
		require.LessOrEqual(t, st.IdleBlocks, 24/B, "step %d %s", step, op)
		// An operation may hold a block more for a moment (a shared
		// block copied before it is written), so the peak is at least
		// what the steps saw, and within the bound.
		peak = max(peak, st.HeldBlocks)
		require.GreaterOrEqual(t, st.PeakBlocks, peak, "step %d %s: the most blocks held at once", step, op)
		require.LessOrEqual(t, st.PeakBlocks, maxTok/B, "step %d %s", step, op)
		require.LessOrEqual(t, st.HeldBlocks+st.SpareBlocks, st.PeakBlocks, "step %d %s: spare memory above the peak", step, op)
		for b := range held {
			require.Positive(t, b.refs, "step %d %s", step, op)
		}
		// Every cache holds what writing its tokens alone writes: reuse,
		// copy-on-write and eviction never hand a sequence another's keys.
		for i, s := range seqs {
			if len(s.tokens) > 0 {
				requireSameAsAlone(t, s.c, s.tokens, fmt.Sprintf("step %d %s: sequence %d", step, op, i))
			}
		}
	}
	counts := map[string]int{}
	for step := range 1000 {
		s := seqs[r.IntN(len(seqs))]
		var op string
		switch r.IntN(7) {
		case 0, 1: // a new prompt: reserve, reuse, prefill
			op = "prefill"
			prompt := append(append([]int(nil), stems[r.IntN(2)][:4+r.IntN(16)]...), testTokens(1+r.IntN(6), uint64(step))...)
			s.c.Reset()
			s.tokens = nil
			if err := s.c.Reserve(len(prompt) + 4); err != nil {
				require.ErrorIs(t, err, ErrFull)
				op = "refused"
				break
			}
			n := s.c.ReusePrefix(prompt)
			require.NoError(t, write(s.c, prompt, len(prompt)-n), "step %d", step)
			s.tokens = prompt
		case 2: // a decode step within the reservation
			op = "step"
			if len(s.tokens) == 0 || s.c.Len() >= s.c.seq.reservation*B {
				break
			}
			next := append(s.tokens, r.IntN(testVocab))
			require.NoError(t, write(s.c, next, 1), "step %d", step)
			s.tokens = next
		case 3: // truncate, often into a block another sequence shares, and write there
			op = "truncate"
			n := r.IntN(len(s.tokens) + 1)
			if n > 0 && n < s.c.Start() {
				require.ErrorContains(t, s.c.Truncate(n), "gave back the positions before")
				op = "truncate refused"
				break
			}
			require.NoError(t, s.c.Truncate(n))
			s.tokens = s.tokens[:n]
			if n > 0 {
				next := append(s.tokens, r.IntN(testVocab))
				require.NoError(t, write(s.c, next, 1), "step %d", step)
				s.tokens = next
			}
		case 4:
			op = "reset"
			s.c.Reset()
			s.tokens = nil
		case 5:
			op = "close"
			s.c.Close()
			s.tokens = nil
		case 6: // a window moving on: nothing before pos is read again
			op = "release"
			pos := s.c.Start() + r.IntN(s.c.Len()-s.c.Start()+1)
			s.c.Release(pos)
			if !free {
				require.Zero(t, s.c.Start(), "step %d: released without FreeBehindWindow", step)
				break
			}
			require.Equal(t, pos/B*B, s.c.Start(), "step %d: released before %d of %d", step, pos, s.c.Len())
		}
		check(step, op)
		counts[op]++
	}
	t.Logf("ops %v, pool %+v", counts, p.Stats())
	require.Positive(t, counts["refused"], "the bound was never reached")
	require.Positive(t, p.Stats().CachedTokens, "no prefix was reused")
	require.Positive(t, p.Stats().Evictions, "nothing was evicted")
	if free {
		require.Positive(t, counts["truncate refused"], "no truncation went below a cache's start")
	}
}

// TestShapeBytes: a bound's memory is its blocks' as a pool holds them,
// float32 or float16, grouped heads or not.
func TestShapeBytes(t *testing.T) {
	mha := Shape{Layers: 2, KVHeads: 4, HeadDim: 8, Positions: 64}
	gqa := Shape{Layers: 2, KVHeads: 2, HeadDim: 8, Positions: 64}
	for _, c := range []struct {
		name   string
		shape  Shape
		tokens int64
		opt    Options
		want   int64
	}{
		{"a context", mha, 64, Options{}, mha.CacheBytes()},
		{"one block", mha, 16, Options{}, 2 * 4 * 2 * 4 * 16 * 8},
		{"float16", mha, 16, Options{Float16: true}, 2 * 2 * 2 * 4 * 16 * 8},
		{"grouped", gqa, 16, Options{}, 2 * 4 * 2 * 2 * 16 * 8},
		{"contexts", mha, 3 * 64, Options{Float16: true}, 3 * mha.CacheBytes() / 2},
	} {
		require.Equal(t, c.want, c.shape.Bytes(c.tokens, c.opt), c.name)
		if c.tokens == DefaultBlockTokens {
			p, err := NewPool(c.shape, c.opt)
			require.NoError(t, err)
			require.Equal(t, p.BlockBytes(), c.shape.Bytes(c.tokens, c.opt), "%s: a pool's block", c.name)
		}
	}
}
