package kvcache

// Shape is what a pool needs of a model: its layers, the key/value heads
// of a layer (fewer than the query heads under grouped-query attention),
// a head's width, and the context a cache can grow to.
type Shape struct {
	Layers, KVHeads, HeadDim, Positions int
}

// CacheBytes is the memory a full-context float32 KV cache of one
// sequence would hold: what a cache can grow to.
func (s Shape) CacheBytes() int64 {
	return 2 * 4 * int64(s.Layers) * int64(s.KVHeads) * int64(s.Positions) * int64(s.HeadDim)
}

// Bytes is the memory tokens positions of KV cache hold, stored as opt
// says (float16: half of float32's): what a pool bounded at tokens can
// grow to, known before any weights are read.
func (s Shape) Bytes(tokens int64, opt Options) int64 {
	kv := tokens * s.CacheBytes() / int64(s.Positions)
	if opt.Float16 {
		kv /= 2
	}
	return kv
}
