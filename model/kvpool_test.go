package model

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/llorch/llorch-check/gguf"
	"github.com/stretchr/testify/require"
)

// pagedModels are the models the paged cache is proved on: GPT-2, a
// grouped-query Llama-family model, and that model quantised (its prefill
// tiles and decode rows take other kernels).
func pagedModels(t *testing.T) []struct {
	name string
	m    *Model
} {
	gpt2, err := Load(filepath.Join("..", "testdata", "tiny-gpt2"))
	require.NoError(t, err)
	qwen := loadLlamaTiny(t, "tiny-llama-qwen2")
	q8, err := loadGGUFBytes(context.Background(), llamaImage(t, qwen, gguf.GGMLTypeQ8_0, llamaSPMVocab, nil), LoadOptions{})
	require.NoError(t, err)
	return []struct {
		name string
		m    *Model
	}{{"gpt2", gpt2}, {"qwen2", qwen}, {"qwen2-q8_0", q8}}
}

// run is a prefill of prompt then one decode step a token of steps, on c:
// the prefill's logits for every row, then each step's.
func run(t *testing.T, m *Model, c *Cache, prompt, steps []int) [][]float32 {
	t.Helper()
	ctx := context.Background()
	out := [][]float32{}
	logits, err := m.Forward(ctx, c, prompt, ForwardOptions{AllLogits: true})
	require.NoError(t, err)
	out = append(out, logits)
	for _, tok := range steps {
		l, err := m.DecodeBatch(ctx, []*Cache{c}, []int{tok})
		require.NoError(t, err)
		out = append(out, append([]float32(nil), l[0]...))
	}
	return out
}

func newPool(t *testing.T, m *Model, opt KVCacheOptions) *KVPool {
	t.Helper()
	p, err := m.NewKVPool(opt)
	require.NoError(t, err)
	return p
}

// Keys and values held in blocks of any size give the bits of one block
// as long as the context (the contiguous cache the pool replaced): logits
// of a prefill and of the steps after it, and the cache's contents.
func TestPagedCacheBlockSizesSameBits(t *testing.T) {
	for _, tm := range pagedModels(t) {
		t.Run(tm.name, func(t *testing.T) {
			m := tm.m
			prompt, steps := tokensFor(m, 37, 1), tokensFor(m, 12, 2)
			whole := newPool(t, m, KVCacheOptions{BlockTokens: m.Config.NPositions}).NewCache()
			want := run(t, m, whole, prompt, steps)
			for _, B := range []int{4, 16, 20} {
				c := newPool(t, m, KVCacheOptions{BlockTokens: B}).NewCache()
				require.Equal(t, want, run(t, m, c, prompt, steps), "block of %d", B)
				for l := range m.Config.NLayer {
					k0, v0 := whole.Snapshot(l)
					k1, v1 := c.Snapshot(l)
					require.Equal(t, k0, k1, "block of %d, layer %d keys", B, l)
					require.Equal(t, v0, v1, "block of %d, layer %d values", B, l)
				}
			}
		})
	}
}

func tokensFor(m *Model, n int, seed int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = (i*7919 + seed*104729 + 13) % m.Config.VocabSize
	}
	return out
}

// A cache holds the blocks of the positions it has, and gives them back.
func TestCacheMemoryFollowsTokens(t *testing.T) {
	m, _ := testModel(t)
	p := newPool(t, m, KVCacheOptions{BlockTokens: 4, SpareLinger: -1}) // memory given back at once (kvspare_test.go: kept a while)
	a, b := p.NewCache(), p.NewCache()
	run(t, m, a, testTokens(9, 1), nil)
	require.Equal(t, 3, p.Stats().HeldBlocks, "9 positions in blocks of 4")
	require.Equal(t, 3*p.BlockBytes(), a.Bytes())
	run(t, m, b, testTokens(4, 2), []int{5})
	require.Equal(t, 5, p.Stats().HeldBlocks)
	require.NoError(t, a.Truncate(4))
	require.Equal(t, 3, p.Stats().HeldBlocks)
	a.Reset()
	require.Equal(t, 2, p.Stats().HeldBlocks)
	b.Close()
	require.Equal(t, KVStats{BlockTokens: 4, BlockBytes: p.BlockBytes(), PeakBlocks: 5}, p.Stats(), "nothing held, 5 blocks at most")
	require.Equal(t, int64(2*2*2*4*8*4), p.BlockBytes(), "2 layers × K,V × 2 heads × 4 positions × 8 dims × float32")
}

// A prompt that shares a prefix with a finished sequence reuses its
// blocks and gets the logits, bit for bit, of computing it all, in the
// steps after it too; shared blocks are copied before they are written.
func TestPrefixReuseSameBits(t *testing.T) {
	for _, tm := range pagedModels(t) {
		t.Run(tm.name, func(t *testing.T) {
			m := tm.m
			shared := tokensFor(m, 40, 3)
			cat := func(a, b []int) []int { return append(append([]int(nil), a...), b...) }
			first, second := cat(shared, tokensFor(m, 10, 4)), cat(shared, tokensFor(m, 7, 5))
			steps := tokensFor(m, 6, 6)
			alone := func(prompt []int) [][]float32 {
				return run(t, m, newPool(t, m, KVCacheOptions{}).NewCache(), prompt, steps)
			}

			p := newPool(t, m, KVCacheOptions{PrefixCache: true, MaxTokens: 1024})
			a := p.NewCache()
			run(t, m, a, first, steps)
			a.Reset()
			require.Equal(t, 3, p.Stats().IdleBlocks, "50 prompt positions: 3 full blocks kept")

			for _, tc := range []struct {
				prompt []int
				reused int
			}{
				{second, 32},     // blocks 0-1 are the shared prefix; block 2 holds first's tokens
				{first, 48},      // all three kept blocks; two tokens left to run
				{first[:48], 32}, // a prompt ending at a block's end runs that block's last token
				{shared[:16], 0}, // one block: its last token must run
			} {
				c := p.NewCache()
				n := c.ReusePrefix(tc.prompt)
				require.Equal(t, tc.reused, n, "prompt of %d", len(tc.prompt))
				got := run(t, m, c, tc.prompt[n:], steps)
				want := alone(tc.prompt)
				V := m.Config.VocabSize
				require.Equal(t, want[0][n*V:], got[0], "prompt of %d, prefill", len(tc.prompt))
				require.Equal(t, want[1:], got[1:], "prompt of %d, steps", len(tc.prompt))
				c.Close()
			}

			// Two caches share the prefix; one truncates into it and
			// writes: the other's steps do not change.
			x, y := p.NewCache(), p.NewCache()
			require.Equal(t, 32, x.ReusePrefix(second))
			require.Equal(t, 32, y.ReusePrefix(second))
			run(t, m, x, second[32:], nil)
			require.NoError(t, x.Truncate(20))
			run(t, m, x, tokensFor(m, 9, 7), nil)
			require.Equal(t, alone(second)[1:], run(t, m, y, second[32:], steps)[1:])
		})
	}
}

// A bounded pool promises blocks to reservations, refuses what it cannot
// promise, and evicts kept blocks least recently used first.
func TestKVPoolBound(t *testing.T) {
	m, _ := testModel(t)
	p := newPool(t, m, KVCacheOptions{BlockTokens: 4, MaxTokens: 16})
	a, b := p.NewCache(), p.NewCache()
	require.NoError(t, a.Reserve(12))
	require.ErrorIs(t, b.Reserve(8), ErrKVCacheFull)
	require.NoError(t, b.Reserve(4))
	_, err := m.Forward(context.Background(), b, testTokens(5, 1), ForwardOptions{})
	require.ErrorIs(t, err, ErrKVCacheFull, "a block past b's reservation would break a's")
	require.Equal(t, 0, b.Len(), "a failed pass leaves the cache as it was")
	run(t, m, a, testTokens(12, 2), nil)
	run(t, m, b, testTokens(4, 3), nil)
	require.Equal(t, 4, p.Stats().HeldBlocks)
	a.Close()
	require.NoError(t, b.Reserve(16), "a's blocks are back")

	kept := newPool(t, m, KVCacheOptions{BlockTokens: 4, MaxTokens: 16, PrefixCache: true})
	c := kept.NewCache()
	run(t, m, c, testTokens(16, 4), nil)
	c.Reset()
	require.Equal(t, 4, kept.Stats().IdleBlocks)
	run(t, m, c, testTokens(8, 5), nil)
	s := kept.Stats()
	require.Equal(t, [3]int64{4, 2, 2}, [3]int64{int64(s.HeldBlocks), int64(s.IdleBlocks), s.Evictions})
	c.Reset()
	require.Equal(t, 4, kept.NewCache().ReusePrefix(append(testTokens(16, 4)[:4], 1, 2)),
		"a prefix's tail is evicted before its head")
}

// A float16 pool holds each key and value rounded to nearest even: the
// first layer's are the float32 pool's, rounded.
func TestKVPoolFloat16(t *testing.T) {
	for _, tm := range pagedModels(t) {
		t.Run(tm.name, func(t *testing.T) {
			m := tm.m
			prompt := tokensFor(m, 21, 8)
			c32 := newPool(t, m, KVCacheOptions{}).NewCache()
			h := newPool(t, m, KVCacheOptions{Float16: true})
			require.Equal(t, newPool(t, m, KVCacheOptions{}).BlockBytes()/2, h.BlockBytes())
			c16 := h.NewCache()
			l32, l16 := run(t, m, c32, prompt, nil), run(t, m, c16, prompt, nil)
			k32, v32 := c32.Snapshot(0)
			k16, v16 := c16.Snapshot(0)
			for i := range k32 {
				require.Equal(t, gguf.Float16To32(gguf.Float32To16(k32[i])), k16[i], "key %d", i)
				require.Equal(t, gguf.Float16To32(gguf.Float32To16(v32[i])), v16[i], "value %d", i)
			}
			require.NotEqual(t, l32, l16, "float16 keys and values change the logits")
			// Prefill and decode, in blocks of 4 or 16, agree in float16 too.
			c4 := newPool(t, m, KVCacheOptions{Float16: true, BlockTokens: 4}).NewCache()
			require.Equal(t, run(t, m, h.NewCache(), prompt[:9], prompt[9:])[1:], run(t, m, c4, prompt[:9], prompt[9:])[1:])
		})
	}
}

// PrefixCacheTokens bounds what is kept for reuse: an idle pool holds
// that much, a prefix's head rather than its tail.
func TestKVPoolKeepsBoundedPrefix(t *testing.T) {
	m, _ := testModel(t)
	p := newPool(t, m, KVCacheOptions{BlockTokens: 4, MaxTokens: 32, PrefixCache: true, PrefixCacheTokens: 8})
	c := p.NewCache()
	prompt := testTokens(18, 6)
	run(t, m, c, prompt, nil)
	c.Reset()
	s := p.Stats()
	require.Equal(t, [3]int64{2, 2, 2}, [3]int64{int64(s.HeldBlocks), int64(s.IdleBlocks), s.Evictions},
		"4 full blocks, 2 kept, the partial one freed")
	require.Equal(t, 8, p.NewCache().ReusePrefix(prompt), "the first two blocks were kept")
}

func TestKVPoolOptions(t *testing.T) {
	m, _ := testModel(t)
	for _, tc := range []struct {
		opt  KVCacheOptions
		want string
	}{
		{KVCacheOptions{BlockTokens: 6}, "block of 6 positions: must be a positive multiple of 4"},
		{KVCacheOptions{BlockTokens: -4}, "block of -4 positions"},
		{KVCacheOptions{MaxTokens: -1}, "KV cache of -1 positions"},
		{KVCacheOptions{MaxTokens: 8, PrefixCache: true, PrefixCacheTokens: -4}, "-4 kept for reuse: must not be negative"},
		{KVCacheOptions{PrefixCache: true}, "without a bound"},
	} {
		_, err := m.NewKVPool(tc.opt)
		require.ErrorContains(t, err, tc.want, fmt.Sprint(tc.opt))
	}
}

// TestKVPoolRandomOps drives a bounded prefix-caching pool through random
// sequences of what a server does (reserve, prefill with reuse, steps,
// truncate, reset, close) and checks after every operation that the
// pool's accounting matches the caches (blocks held, promised, kept) and
// that every cache's keys and values are those of computing its tokens
// from scratch.
func TestKVPoolRandomOps(t *testing.T) {
	m, _ := testModel(t)
	ctx := context.Background()
	const B, maxTok = 4, 64
	p := newPool(t, m, KVCacheOptions{BlockTokens: B, MaxTokens: maxTok, PrefixCache: true, PrefixCacheTokens: 24})
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
			for _, b := range s.c.seq.blocks {
				held[b] = true
			}
			promised += max(s.c.seq.reservation, len(s.c.seq.blocks))
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
	}
	// Every cache holds what computing its tokens alone writes: reuse,
	// copy-on-write and eviction never hand a sequence another's keys.
	sameAsAlone := func(step int, op string) {
		t.Helper()
		for i, s := range seqs {
			if len(s.tokens) == 0 {
				continue
			}
			alone := newPool(t, m, KVCacheOptions{}).NewCache()
			_, err := m.Forward(ctx, alone, s.tokens, ForwardOptions{})
			require.NoError(t, err)
			for l := range m.Config.NLayer {
				k0, v0 := alone.Snapshot(l)
				k1, v1 := s.c.Snapshot(l)
				require.Equal(t, k0, k1, "step %d %s: sequence %d layer %d keys", step, op, i, l)
				require.Equal(t, v0, v1, "step %d %s: sequence %d layer %d values", step, op, i, l)
			}
		}
	}
	counts := map[string]int{}
	for step := range 1000 {
		s := seqs[r.IntN(len(seqs))]
		var op string
		switch r.IntN(6) {
		case 0, 1: // a new prompt: reserve, reuse, prefill
			op = "prefill"
			prompt := append(append([]int(nil), stems[r.IntN(2)][:4+r.IntN(16)]...), testTokens(1+r.IntN(6), uint64(step))...)
			s.c.Reset()
			s.tokens = nil
			if err := s.c.Reserve(len(prompt) + 4); err != nil {
				require.ErrorIs(t, err, ErrKVCacheFull)
				op = "refused"
				break
			}
			n := s.c.ReusePrefix(prompt)
			_, err := m.Forward(ctx, s.c, prompt[n:], ForwardOptions{})
			require.NoError(t, err, "step %d", step)
			s.tokens = prompt
		case 2: // a decode step within the reservation
			op = "step"
			if len(s.tokens) == 0 || s.c.Len() >= s.c.seq.reservation*B {
				break
			}
			tok := r.IntN(m.Config.VocabSize)
			_, err := m.DecodeBatch(ctx, []*Cache{s.c}, []int{tok})
			require.NoError(t, err, "step %d", step)
			s.tokens = append(s.tokens, tok)
		case 3: // truncate, often into a block another sequence shares, and write there
			op = "truncate"
			n := r.IntN(len(s.tokens) + 1)
			require.NoError(t, s.c.Truncate(n))
			s.tokens = s.tokens[:n]
			if n > 0 {
				tok := r.IntN(m.Config.VocabSize)
				_, err := m.DecodeBatch(ctx, []*Cache{s.c}, []int{tok})
				require.NoError(t, err, "step %d", step)
				s.tokens = append(s.tokens, tok)
			}
		case 4:
			op = "reset"
			s.c.Reset()
			s.tokens = nil
		case 5:
			op = "close"
			s.c.Close()
			s.tokens = nil
		}
		check(step, op)
		sameAsAlone(step, op)
		counts[op]++
	}
	t.Logf("ops %v, pool %+v", counts, p.Stats())
	require.Positive(t, counts["refused"], "the bound was never reached")
	require.Positive(t, p.Stats().CachedTokens, "no prefix was reused")
	require.Positive(t, p.Stats().Evictions, "nothing was evicted")
}

// TestKVCacheBytes: a bound's memory is its blocks' as a pool holds them,
// float32 or float16, grouped heads or not.
func TestKVCacheBytes(t *testing.T) {
	gpt2 := Config{NPositions: 64, NEmbd: 32, NLayer: 2, NHead: 4}
	gqa := Config{ModelType: "llama", NPositions: 64, NEmbd: 32, NLayer: 2, NHead: 4, Llama: Llama{NKVHead: 2}}
	for _, c := range []struct {
		name   string
		cfg    Config
		tokens int64
		opt    KVCacheOptions
		want   int64
	}{
		{"a context", gpt2, 64, KVCacheOptions{}, gpt2.CacheBytes()},
		{"one block", gpt2, 16, KVCacheOptions{}, 2 * 4 * 2 * 4 * 16 * 8},
		{"float16", gpt2, 16, KVCacheOptions{Float16: true}, 2 * 2 * 2 * 4 * 16 * 8},
		{"grouped", gqa, 16, KVCacheOptions{}, 2 * 4 * 2 * 2 * 16 * 8},
		{"contexts", gpt2, 3 * 64, KVCacheOptions{Float16: true}, 3 * gpt2.CacheBytes() / 2},
	} {
		require.Equal(t, c.want, c.cfg.KVCacheBytes(c.tokens, c.opt), c.name)
		if c.tokens == DefaultBlockTokens {
			p, err := (&Model{Config: c.cfg}).NewKVPool(c.opt)
			require.NoError(t, err)
			require.Equal(t, p.BlockBytes(), c.cfg.KVCacheBytes(c.tokens, c.opt), "%s: a pool's block", c.name)
		}
	}
}
