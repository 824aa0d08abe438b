package model

import (
	"fmt"

	"github.com/llorch/llorch-check/kvcache"
)

// KVShape is the shape of the model's KV cache: what a kvcache.Pool needs
// of the model, and what its memory is computed from.
func (c Config) KVShape() kvcache.Shape {
	return kvcache.Shape{Layers: c.NLayer, KVHeads: c.KVHeads(), HeadDim: c.HeadDim(), Positions: c.NPositions}
}

// NewKVPool returns an empty pool for m's caches.
func (m *Model) NewKVPool(opt kvcache.Options) (*kvcache.Pool, error) {
	return kvcache.NewPool(m.Config.KVShape(), opt)
}

// NewCache returns an empty cache for up to NPositions positions, on a
// float32 pool of its own with no bound.
func (m *Model) NewCache() *kvcache.Cache {
	p, _ := m.NewKVPool(kvcache.Options{}) // the defaults are valid
	return p.NewCache()
}

// qkvLayout is where q, k and v sit in a row of the fused projection:
// GPT-2's c_attn gives [q | k | v] of C each; the Llama family's give H
// query heads then Hkv key and Hkv value heads.
type qkvLayout struct {
	width, k, v int
}

func (c Config) qkvLayout() qkvLayout {
	q, kv := c.NHead*c.HeadDim(), c.KVHeads()*c.HeadDim()
	return qkvLayout{width: q + 2*kv, k: q, v: q + kv}
}

// windowStart is the first key a pass whose first query is at position
// off reads in any layer: that query's sliding-window start in the layer
// with the widest window, or 0 when some layer (or a fault) sees every
// earlier key. Later queries of the pass see no earlier key.
func (m *Model) windowStart(off int) int {
	w := 0
	for l := range m.Config.NLayer {
		f := m.faultsAt(l)
		if f.window <= 0 || f.noCausalMask {
			return 0
		}
		w = max(w, f.window)
	}
	return max(0, off+1-w)
}

// releaseBehindWindow tells c that the keys before the pass's window
// start will not be read again (a pool made with FreeBehindWindow gives
// their blocks back), and refuses a cache that already gave back keys the
// pass reads (truncated back past its window, or released under another
// window).
func (m *Model) releaseBehindWindow(c *kvcache.Cache, off int) error {
	first := m.windowStart(off)
	if c.Start() > first {
		return fmt.Errorf("forward: the pass at position %d reads keys from position %d, but the cache gave back those before %d", off, first, c.Start())
	}
	c.Release(first)
	return nil
}
