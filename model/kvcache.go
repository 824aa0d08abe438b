package model

import "github.com/llorch/llorch-check/kvcache"

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
