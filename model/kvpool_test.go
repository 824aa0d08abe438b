package model

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/kvcache"
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
func run(t *testing.T, m *Model, c *kvcache.Cache, prompt, steps []int) [][]float32 {
	t.Helper()
	ctx := context.Background()
	out := [][]float32{}
	logits, err := m.Forward(ctx, c, prompt, ForwardOptions{AllLogits: true})
	require.NoError(t, err)
	out = append(out, logits)
	for _, tok := range steps {
		l, err := m.DecodeBatch(ctx, []*kvcache.Cache{c}, []int{tok})
		require.NoError(t, err)
		out = append(out, append([]float32(nil), l[0]...))
	}
	return out
}

func newPool(t *testing.T, m *Model, opt kvcache.Options) *kvcache.Pool {
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
			whole := newPool(t, m, kvcache.Options{BlockTokens: m.Config.NPositions}).NewCache()
			want := run(t, m, whole, prompt, steps)
			for _, B := range []int{4, 16, 20} {
				c := newPool(t, m, kvcache.Options{BlockTokens: B}).NewCache()
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
				return run(t, m, newPool(t, m, kvcache.Options{}).NewCache(), prompt, steps)
			}

			p := newPool(t, m, kvcache.Options{PrefixCache: true, MaxTokens: 1024})
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

// A float16 pool holds each key and value rounded to nearest even: the
// first layer's are the float32 pool's, rounded.
func TestKVPoolFloat16(t *testing.T) {
	for _, tm := range pagedModels(t) {
		t.Run(tm.name, func(t *testing.T) {
			m := tm.m
			prompt := tokensFor(m, 21, 8)
			c32 := newPool(t, m, kvcache.Options{}).NewCache()
			h := newPool(t, m, kvcache.Options{Float16: true})
			require.Equal(t, newPool(t, m, kvcache.Options{}).BlockBytes()/2, h.BlockBytes())
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
			c4 := newPool(t, m, kvcache.Options{Float16: true, BlockTokens: 4}).NewCache()
			require.Equal(t, run(t, m, h.NewCache(), prompt[:9], prompt[9:])[1:], run(t, m, c4, prompt[:9], prompt[9:])[1:])
		})
	}
}

// A pass the pool's bound refuses fails with kvcache.ErrFull and leaves
// the cache as it was: once there is room, the same pass gives the bits
// of a fresh cache.
func TestForwardKVCacheFull(t *testing.T) {
	m, _ := testModel(t)
	p := newPool(t, m, kvcache.Options{BlockTokens: 4, MaxTokens: 16})
	a, b := p.NewCache(), p.NewCache()
	require.NoError(t, a.Reserve(12))
	require.NoError(t, b.Reserve(4))
	prompt := testTokens(5, 1)
	_, err := m.Forward(context.Background(), b, prompt, ForwardOptions{})
	require.ErrorIs(t, err, kvcache.ErrFull, "a block past b's reservation would break a's")
	require.Equal(t, 0, b.Len(), "a failed pass leaves the cache as it was")
	_, err = m.DecodeBatch(context.Background(), []*kvcache.Cache{a, b}, []int{1, 2})
	require.NoError(t, err)
	_, err = m.StepBatch(context.Background(), []*kvcache.Cache{a, b}, [][]int{{3}, {4, 5, 6, 7}})
	require.ErrorIs(t, err, kvcache.ErrFull)
	require.ErrorContains(t, err, "sequence 1: ")
	require.Equal(t, [2]int{1, 1}, [2]int{a.Len(), b.Len()}, "a failed batch changes no cache")
	a.Close()
	b.Reset()
	want := run(t, m, m.NewCache(), prompt, []int{3})
	require.Equal(t, want, run(t, m, b, prompt, []int{3}))
}

// A model's KV cache shape is its layers, its key/value heads (fewer
// than its query heads under grouped-query attention), their width and
// its context; the caches of its pools are made in it.
func TestKVShape(t *testing.T) {
	gpt2 := Config{NPositions: 64, NEmbd: 32, NLayer: 2, NHead: 4}
	gqa := Config{ModelType: "llama", NPositions: 64, NEmbd: 32, NLayer: 2, NHead: 4, Llama: Llama{NKVHead: 2}}
	require.Equal(t, kvcache.Shape{Layers: 2, KVHeads: 4, HeadDim: 8, Positions: 64}, gpt2.KVShape())
	require.Equal(t, kvcache.Shape{Layers: 2, KVHeads: 2, HeadDim: 8, Positions: 64}, gqa.KVShape())
	p, err := (&Model{Config: gqa}).NewKVPool(kvcache.Options{})
	require.NoError(t, err)
	require.Equal(t, gqa.KVShape(), p.NewCache().Shape())
	require.Equal(t, gpt2.KVShape(), (&Model{Config: gpt2}).NewCache().Shape())
}
