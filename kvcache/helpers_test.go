package kvcache

import (
	"encoding/binary"
	"hash/fnv"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// testShape is the model package's small test model's: 2 layers of 2 KV
// heads of 8, a context of 32.
var testShape = Shape{Layers: 2, KVHeads: 2, HeadDim: 8, Positions: 32}

// testVocab is the tokens testTokens draws from.
const testVocab = 97

func testTokens(n int, seed uint64) []int {
	r := rand.New(rand.NewPCG(seed, 2))
	toks := make([]int, n)
	for i := range toks {
		toks[i] = r.IntN(testVocab)
	}
	return toks
}

func newPool(t *testing.T, opt Options) *Pool {
	t.Helper()
	p, err := NewPool(testShape, opt)
	require.NoError(t, err)
	return p
}

// write is what a forward pass does to a cache, without a model: c holds
// seq but its last T tokens, and write grows it by those, stores every
// layer's keys and values and commits them. A position's keys and values
// depend on every token up to it, as a model's do, so a cache holding a
// block of another prefix holds other values than computing its own
// tokens alone (sameAsAlone).
func write(c *Cache, seq []int, T int) error {
	s, off := c.Shape(), len(seq)-T
	if err := c.Grow(T); err != nil {
		return err
	}
	W := s.KVHeads * s.HeadDim
	k, v := make([]float32, T*W), make([]float32, T*W)
	h := fnv.New64a()
	for _, tok := range seq[:off] {
		h.Write(binary.LittleEndian.AppendUint32(nil, uint32(tok)))
	}
	for t := range T {
		h.Write(binary.LittleEndian.AppendUint32(nil, uint32(seq[off+t])))
		prefix := h.Sum64()
		for i := range W {
			k[t*W+i], v[t*W+i] = kvValue(prefix, 0, i), kvValue(prefix, 1, i)
		}
	}
	for l := range s.Layers {
		for i := range k {
			k[i], v[i] = k[i]+1, v[i]-1 // each layer its own values
		}
		c.Store(l, k, v, W, off, T)
	}
	c.Commit(seq[off:])
	return nil
}

// kvValue is a key (kv 0) or value (kv 1) for column i of a position
// whose prefix hashes to prefix: a float32 exact in float16 too, so a
// float16 pool holds the same values.
func kvValue(prefix uint64, kv, i int) float32 {
	x := prefix ^ uint64(kv)<<62 ^ uint64(i)*0x9e3779b97f4a7c15
	x ^= x >> 31
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 29
	return float32(int64(x>>54)-512) / 64
}

// run is a prefill of prompt then one step a token of steps, on an empty
// c; it returns the sequence.
func run(t *testing.T, c *Cache, prompt, steps []int) []int {
	t.Helper()
	require.Zero(t, c.Len())
	seq := append([]int(nil), prompt...)
	require.NoError(t, write(c, seq, len(seq)))
	for _, tok := range steps {
		seq = append(seq, tok)
		require.NoError(t, write(c, seq, 1))
	}
	return seq
}

// requireSameAsAlone checks that c holds the keys and values of writing
// seq on a cache of its own, at the positions it holds (from its Start).
func requireSameAsAlone(t *testing.T, c *Cache, seq []int, what string) {
	t.Helper()
	alone := newPool(t, Options{}).NewCache()
	require.NoError(t, write(alone, seq, len(seq)))
	n, B, D, buf := len(seq), c.BlockTokens(), testShape.HeadDim, make([]float32, c.BlockBufLen())
	for l := range testShape.Layers {
		k0, v0 := alone.Snapshot(l)
		if c.Start() == 0 {
			k1, v1 := c.Snapshot(l)
			require.Equal(t, k0, k1, "%s: layer %d keys", what, l)
			require.Equal(t, v0, v1, "%s: layer %d values", what, l)
			continue
		}
		for h := range testShape.KVHeads {
			for i := c.Start() / B; i*B < n; i++ {
				rows := min(B, n-i*B)
				at := (h*n + i*B) * D
				require.Equal(t, k0[at:at+rows*D], c.BlockKeys(l, h, i, buf)[:rows*D], "%s: layer %d head %d block %d keys", what, l, h, i)
				require.Equal(t, v0[at:at+rows*D], c.BlockValues(l, h, i, buf)[:rows*D], "%s: layer %d head %d block %d values", what, l, h, i)
			}
		}
	}
}
