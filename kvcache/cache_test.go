package kvcache

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/ggmlnum"
)

// Store reads position off+t's heads at k[t*stride:] and v[t*stride:] (here
// the key and value columns of fused q | k | v rows); Snapshot gives them
// back as [KVHeads, Len, HeadDim], BlockKeys and BlockValues block by
// block as [BlockTokens, HeadDim], and Overwrite replaces positions from
// [KVHeads, n, HeadDim] slices. A float16 pool rounds each to nearest even.
func TestStoreLayout(t *testing.T) {
	H, D := testShape.KVHeads, testShape.HeadDim
	const n, q = 11, 3 * 8 // positions; the query columns before the keys
	W := q + 2*H*D
	for _, tc := range []struct {
		name string
		opt  Options
	}{
		{"float32, blocks of 4", Options{BlockTokens: 4}},
		{"float16, blocks of 8", Options{BlockTokens: 8, Float16: true}},
		{"float32, one block", Options{BlockTokens: 32}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			round := func(x float32) float32 { return x }
			if tc.opt.Float16 {
				round = func(x float32) float32 { return ggmlnum.Float16To32(ggmlnum.Float32To16(x)) }
			}
			rows := make([][]float32, testShape.Layers) // each layer's fused rows
			for l := range rows {
				rows[l] = make([]float32, n*W)
				for i := range rows[l] {
					rows[l][i] = float32(l*10000+i) + 1.0/3 // a third: rounded in float16
				}
			}
			c := newPool(t, tc.opt).NewCache()
			for _, span := range [][2]int{{0, 7}, {7, 1}, {8, 3}} { // a prefill, then steps
				off, T := span[0], span[1]
				require.NoError(t, c.Grow(T))
				for l := range rows {
					r := rows[l][off*W:]
					c.Store(l, r[q:], r[q+H*D:], W, off, T)
				}
				c.Commit(make([]int, T))
			}
			require.Equal(t, n, c.Len())

			B := c.BlockTokens()
			require.Equal(t, tc.opt.BlockTokens, B)
			buf := make([]float32, c.BlockBufLen())
			if tc.opt.Float16 {
				require.Len(t, buf, B*D, "a float16 block of one head is widened into buf")
			} else {
				require.Empty(t, buf, "a float32 block is read where it is held")
			}
			for l := range rows {
				k, v := c.Snapshot(l)
				for h := range H {
					for pos := range n {
						for d := range D {
							at := (h*n+pos)*D + d
							require.Equal(t, round(rows[l][pos*W+q+h*D+d]), k[at], "layer %d head %d position %d key %d", l, h, pos, d)
							require.Equal(t, round(rows[l][pos*W+q+(H+h)*D+d]), v[at], "layer %d head %d position %d value %d", l, h, pos, d)
							bk := c.BlockKeys(l, h, pos/B, buf)[pos%B*D+d]
							require.Equal(t, k[at], bk, "layer %d head %d position %d: block keys", l, h, pos)
							bv := c.BlockValues(l, h, pos/B, buf)[pos%B*D+d]
							require.Equal(t, v[at], bv, "layer %d head %d position %d: block values", l, h, pos)
						}
					}
				}
			}

			// Overwrite positions 3..6 of layer 1 only.
			fk, fv := make([]float32, H*n*D), make([]float32, H*n*D)
			for i := range fk {
				fk[i], fv[i] = -float32(i)-0.1, float32(i)+0.1
			}
			k0, v0 := c.Snapshot(0)
			k1, v1 := c.Snapshot(1)
			c.Overwrite(1, fk, fv, n, 3, 4)
			for i := range k1 {
				if pos := i / D % n; pos >= 3 && pos < 7 {
					k1[i], v1[i] = round(fk[i]), round(fv[i])
				}
			}
			gk0, gv0 := c.Snapshot(0)
			gk1, gv1 := c.Snapshot(1)
			require.Equal(t, [4][]float32{k0, v0, k1, v1}, [4][]float32{gk0, gv0, gk1, gv1})
			gk, gv := c.Snapshot(testShape.Layers)
			require.Nil(t, gk, "a layer past the model's")
			require.Nil(t, gv)
		})
	}
}

// Grow copies a block shared with another cache before it is written,
// so writing one sequence never changes another's keys and values.
func TestGrowCopiesSharedBlocks(t *testing.T) {
	p := newPool(t, Options{BlockTokens: 4, MaxTokens: 32, PrefixCache: true})
	prompt := testTokens(10, 7)
	first := p.NewCache()
	run(t, first, prompt, nil) // indexes its two full blocks
	first.Close()              // and the pool keeps them
	a, b := p.NewCache(), p.NewCache()
	require.Equal(t, 8, a.ReusePrefix(prompt))
	require.Equal(t, 8, b.ReusePrefix(prompt))
	require.NoError(t, a.Truncate(6))
	other := append(append([]int(nil), prompt[:6]...), 50, 51, 52)
	require.NoError(t, write(a, other, 3))
	requireSameAsAlone(t, a, other, "the cache that wrote")
	require.NoError(t, write(b, prompt, 2))
	requireSameAsAlone(t, b, prompt, "the cache sharing the block")
}

// A prefix-caching pool reuses a block only for a cache of the variant
// that computed it (longrope's short and long rotations of the same
// tokens), and a cache keeps its tokens whether or not the pool caches
// prefixes, for a pass that recomputes the sequence.
func TestPrefixVariants(t *testing.T) {
	p := newPool(t, Options{BlockTokens: 4, MaxTokens: 64, PrefixCache: true})
	prompt := testTokens(10, 3)
	short := p.NewCache()
	run(t, short, prompt, nil)
	require.Equal(t, prompt, short.Tokens())
	short.Close()

	long := p.NewCache()
	long.SetVariant(1)
	require.Zero(t, long.ReusePrefix(prompt), "the short blocks are not the long cache's")
	run(t, long, prompt, nil)
	long.Close()
	require.Zero(t, long.Variant(), "closed: variant 0")

	for v, want := range []int{8, 8} {
		c := p.NewCache()
		c.SetVariant(uint8(v))
		require.Equal(t, want, c.ReusePrefix(prompt), "variant %d finds its own two blocks", v)
		require.Equal(t, prompt[:8], c.Tokens())
		require.NoError(t, c.Truncate(0))
		require.Zero(t, c.Variant(), "truncated to nothing: variant 0")
		c.Close()
	}

	plain := newPool(t, Options{BlockTokens: 4, MaxTokens: 64}).NewCache()
	run(t, plain, prompt, nil)
	require.Equal(t, prompt, plain.Tokens(), "no prefix cache: the tokens are kept all the same")
	require.NoError(t, plain.Truncate(3))
	require.Equal(t, prompt[:3], plain.Tokens())
}
