package model

import "fmt"

// Cache holds the keys and values of the positions a sequence has seen so
// far. Each layer stores K and V as [H, capacity, D], H the key/value heads
// (fewer than the query heads under grouped-query attention), so that the
// keys of one head are a contiguous [positions, D] matrix for the
// attention GEMMs.
type Cache struct {
	nLayer, nHead, headDim, capacity int
	n                                int
	k, v                             [][]float32
	logits                           []float32 // DecodeBatch's result for this sequence, reused
}

// NewCache returns an empty cache for up to NPositions positions.
func (m *Model) NewCache() *Cache {
	cfg := m.Config
	c := &Cache{nLayer: cfg.NLayer, nHead: cfg.KVHeads(), headDim: cfg.HeadDim(), capacity: cfg.NPositions}
	size := c.nHead * cfg.NPositions * cfg.HeadDim()
	c.k = make([][]float32, cfg.NLayer)
	c.v = make([][]float32, cfg.NLayer)
	for l := range c.k {
		c.k[l] = make([]float32, size)
		c.v[l] = make([]float32, size)
	}
	return c
}

// CacheBytes is the memory of one full-context KV cache (NewCache).
func (c Config) CacheBytes() int64 {
	return 2 * 4 * int64(c.NLayer) * int64(c.KVHeads()) * int64(c.NPositions) * int64(c.HeadDim())
}

// Len is the number of positions held.
func (c *Cache) Len() int { return c.n }

// Cap is the number of positions the cache can hold.
func (c *Cache) Cap() int { return c.capacity }

// stepLogits is the cache's logits buffer of v floats: reused every step,
// because a fresh 200 KB a step cost ~0.8 ms in page faults here (the
// runtime returns freed pages to the OS), 10% of a quantised decode step.
func (c *Cache) stepLogits(v int) []float32 {
	if len(c.logits) != v {
		c.logits = make([]float32, v)
	}
	return c.logits
}

// Reset empties the cache without freeing its memory.
func (c *Cache) Reset() { c.n = 0 }

// Truncate keeps the first n positions.
func (c *Cache) Truncate(n int) error {
	if n < 0 || n > c.n {
		return fmt.Errorf("truncating cache to %d positions: it holds %d", n, c.n)
	}
	c.n = n
	return nil
}

// Snapshot copies layer's keys and values as [H, Len, D] row-major slices.
// An out-of-range layer gives nil slices.
func (c *Cache) Snapshot(layer int) (k, v []float32) {
	if layer < 0 || layer >= c.nLayer {
		return nil, nil
	}
	return c.compact(c.k[layer]), c.compact(c.v[layer])
}

func (c *Cache) compact(src []float32) []float32 {
	D, stride := c.headDim, c.capacity*c.headDim
	out := make([]float32, 0, c.nHead*c.n*D)
	for h := 0; h < c.nHead; h++ {
		out = append(out, src[h*stride:h*stride+c.n*D]...)
	}
	return out
}

// head returns the first n rows of layer's keys or values for head h.
func (c *Cache) head(kv []float32, h, n int) []float32 {
	start := h * c.capacity * c.headDim
	return kv[start : start+n*c.headDim]
}

// store copies the new tokens' keys and values into layer l's cache at
// positions off..off+T-1, from rows of qkv (q | k | v, heads side by side,
// l.width floats a row).
func (c *Cache) store(l int, qkv []float32, lay qkvLayout, off, T int) {
	D := c.headDim
	for h := 0; h < c.nHead; h++ {
		kh := c.head(c.k[l], h, off+T)
		vh := c.head(c.v[l], h, off+T)
		for t := 0; t < T; t++ {
			src := qkv[t*lay.width:]
			copy(kh[(off+t)*D:(off+t+1)*D], src[lay.k+h*D:lay.k+(h+1)*D])
			copy(vh[(off+t)*D:(off+t+1)*D], src[lay.v+h*D:lay.v+(h+1)*D])
		}
	}
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
