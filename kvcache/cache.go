package kvcache

import (
	"context"
	"errors"
	"fmt"
	"runtime"

	"github.com/llorch/llorch-check/internal/ggmlnum"
	"github.com/llorch/llorch-check/kernels"
)

// Cache holds the keys and values of the positions one sequence has seen,
// in blocks of its Pool: a block is taken as the sequence grows into it
// and given back by Reset, Truncate or Close (or when the cache is
// garbage), so a cache holds memory for the positions it has, not for the
// context. Blocks of a prompt prefix may be shared with other caches of a
// prefix-caching pool (ReusePrefix); a shared block is never written, a
// cache that must write into one copies it first.
type Cache struct {
	seq      *kvSeq
	n        int
	capacity int
	tokens   []int32   // the positions' tokens
	variant  uint8     // SetVariant's
	logits   []float32 // LogitsBuffer's, reused step after step
}

// kvSeq is what a cache holds in its pool, apart from the Cache itself so
// that a cache dropped without Close gives its blocks back when collected.
type kvSeq struct {
	pool        *Pool
	blocks      []*kvBlock // blocks[:gone] are nil: given back by Release
	gone        int
	reservation int // blocks this cache may grow to whatever the others take
}

// live is the blocks the sequence holds: those not given back by Release.
func (s *kvSeq) live() int { return len(s.blocks) - s.gone }

// NewCache returns an empty cache of the pool, for up to the shape's
// Positions.
func (p *Pool) NewCache() *Cache {
	c := &Cache{seq: &kvSeq{pool: p}, capacity: p.capacity}
	runtime.AddCleanup(c, (*kvSeq).close, c.seq)
	return c
}

// Len is the number of positions held.
func (c *Cache) Len() int { return c.n }

// Cap is the number of positions the cache can hold.
func (c *Cache) Cap() int { return c.capacity }

// Bytes is the memory of the blocks the cache holds, shared ones included.
func (c *Cache) Bytes() int64 { return int64(c.seq.live()) * c.seq.pool.BlockBytes() }

// Shape is the model shape the cache was made for, Positions being its
// capacity: a forward pass refuses a cache of another model's shape.
func (c *Cache) Shape() Shape {
	p := c.seq.pool
	return Shape{Layers: p.nLayer, KVHeads: p.nHead, HeadDim: p.headDim, Positions: c.capacity}
}

// LogitsBuffer is a buffer of n floats the cache owns for its sequence's
// logits (a batched decode's result), reused every step, because a fresh
// 200 KB a step cost ~0.8 ms in page faults here (the runtime returns
// freed pages to the OS), 10% of a quantised decode step.
func (c *Cache) LogitsBuffer(n int) []float32 {
	if len(c.logits) != n {
		c.logits = make([]float32, n)
	}
	return c.logits
}

// Reset empties the cache and gives its blocks back to the pool (a
// prefix-caching pool keeps the full ones for reuse). Its reservation
// stays.
func (c *Cache) Reset() {
	c.n, c.tokens, c.variant = 0, c.tokens[:0], 0
	c.seq.shrink(0)
}

// Close empties the cache and ends its reservation.
func (c *Cache) Close() {
	c.n, c.tokens, c.variant = 0, nil, 0
	c.seq.close()
}

// Truncate keeps the first n positions, giving back the blocks past them.
func (c *Cache) Truncate(n int) error {
	if n < 0 || n > c.n {
		return fmt.Errorf("truncating cache to %d positions: it holds %d", n, c.n)
	}
	if n > 0 && n < c.Start() {
		return fmt.Errorf("truncating cache to %d positions: it gave back the positions before %d (Release)", n, c.Start())
	}
	c.n, c.tokens = n, c.tokens[:n]
	if n == 0 {
		c.variant = 0
	}
	c.seq.shrink(c.seq.pool.blocksFor(n))
	return nil
}

// Reserve makes sure the cache can grow to positions positions whatever
// other caches of the pool take meanwhile, or returns ErrFull at
// once: a server reserves a request's prompt plus its new tokens when it
// admits it, so that no sequence runs out of blocks half way. Memory is
// still only taken as positions are written.
func (c *Cache) Reserve(positions int) error {
	p := c.seq.pool
	want := p.blocksFor(min(positions, c.capacity))
	p.mu.Lock()
	defer p.mu.Unlock()
	held := c.seq.live()
	next := p.reserved - max(c.seq.reservation, held) + max(want, held)
	if p.maxBlocks > 0 && next > p.maxBlocks {
		return fmt.Errorf("%w: %d positions need %d blocks of %d; %d of %d are promised to running sequences",
			ErrFull, positions, want, p.blockTokens, p.reserved-max(c.seq.reservation, held), p.maxBlocks)
	}
	if next < p.reserved {
		p.wake()
	}
	p.reserved, c.seq.reservation = next, want
	return nil
}

// ReserveWait is Reserve that waits, while ctx lasts, for running
// sequences to give blocks back. A reservation the whole pool could never
// hold fails at once.
func (c *Cache) ReserveWait(ctx context.Context, positions int) error {
	p := c.seq.pool
	if need := p.blocksFor(min(positions, c.capacity)); p.maxBlocks > 0 && need > p.maxBlocks {
		return fmt.Errorf("%w: %d positions need %d blocks of %d; the pool holds %d (%d positions)",
			ErrFull, positions, need, p.blockTokens, p.maxBlocks, p.MaxTokens())
	}
	for {
		p.mu.Lock()
		freed := p.freed
		p.mu.Unlock()
		err := c.Reserve(positions)
		if !errors.Is(err, ErrFull) {
			return err
		}
		select {
		case <-freed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Grow makes room for T positions past Len, for a forward pass to write
// (Store, Overwrite) before it commits them: it takes the blocks they
// need, and copies a shared or indexed block they fall in so that writing
// it changes no other sequence. A block past the cache's reservation is
// only taken if the pool's bound leaves room for it; if not, the error
// wraps ErrFull. The positions stay invisible to Len until Commit, and a
// pass that fails before it leaves the cache's positions as they were.
func (c *Cache) Grow(T int) error { return c.seq.grow(c.n, c.n+T) }

// shrink keeps the first n blocks.
func (s *kvSeq) shrink(n int) {
	if n >= len(s.blocks) {
		return
	}
	p := s.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	before := max(s.reservation, s.live())
	// Last block first: kept blocks are evicted in the order they were
	// given back, and a prefix's tail is worth less than its head (no
	// block can be found without every block before it).
	for i := len(s.blocks) - 1; i >= max(n, s.gone); i-- {
		p.unref(s.blocks[i])
	}
	clear(s.blocks[n:])
	s.blocks = s.blocks[:n]
	s.gone = min(s.gone, n)
	p.reserved += max(s.reservation, s.live()) - before
	p.wake()
}

func (s *kvSeq) close() {
	s.shrink(0)
	p := s.pool
	p.mu.Lock()
	p.reserved -= s.reservation
	s.reservation = 0
	p.wake()
	p.mu.Unlock()
}

// grow makes blocks for positions up to n (exclusive) and makes the ones
// positions from..n-1 fall in private, copying a shared or indexed block
// before it is written. A block past the cache's reservation is only
// taken if the pool's bound leaves room for it.
func (s *kvSeq) grow(from, n int) error {
	p := s.pool
	first, need := from/p.blockTokens, p.blocksFor(n)
	p.mu.Lock()
	defer p.mu.Unlock()
	if first < s.gone {
		return fmt.Errorf("writing position %d: the cache gave back the positions before %d (Release)", from, s.gone*p.blockTokens)
	}
	for i := first; i < min(need, len(s.blocks)); i++ {
		if err := s.private(i); err != nil {
			return err
		}
	}
	for len(s.blocks) < need {
		if p.maxBlocks > 0 && s.live() >= s.reservation && p.reserved >= p.maxBlocks {
			return fmt.Errorf("%w: all %d blocks of %d positions are promised to running sequences",
				ErrFull, p.maxBlocks, p.blockTokens)
		}
		b, err := p.alloc()
		if err != nil {
			return err
		}
		if s.live() >= s.reservation {
			p.reserved++
		}
		s.blocks = append(s.blocks, b)
	}
	return nil
}

// private makes block i the cache's alone: an indexed block it alone
// references leaves the index; a shared one is copied. p.mu is held.
func (s *kvSeq) private(i int) error {
	p, b := s.pool, s.blocks[i]
	if b.refs == 1 {
		if b.tokens != nil {
			delete(p.index, b.key)
			b.tokens = nil
		}
		return nil
	}
	cp, err := p.alloc()
	if err != nil {
		return err
	}
	copy(cp.f32, b.f32)
	copy(cp.f16, b.f16)
	p.unref(b)
	s.blocks[i] = cp
	return nil
}

// at is where head h's K (kv 0) or V (kv 1) of layer l starts in a block.
func (p *Pool) at(l, kv, h int) int {
	return ((l*2+kv)*p.nHead + h) * p.blockTokens * p.headDim
}

// Store copies T new positions' keys and values into layer l at positions
// off..off+T-1, made room for by Grow. Position off+t's keys are
// k[t*stride:], its values v[t*stride:], each KVHeads heads of HeadDim
// side by side: k and v may be the key and value columns of one fused
// projection's rows (stride its width). A float16 pool rounds them to
// nearest even.
func (c *Cache) Store(l int, k, v []float32, stride, off, T int) {
	// A prefill's positions are shared over the cores (one core copied
	// them while the other waited); a decode step's one is copied here.
	const per = 16
	kernels.ParallelRange(T, per, func(t0, t1 int) { c.storeRows(l, k, v, stride, off, t0, t1) })
}

// storeRows is Store's rows t0..t1-1.
func (c *Cache) storeRows(l int, krows, vrows []float32, stride, off, t0, t1 int) {
	p := c.seq.pool
	B, D := p.blockTokens, p.headDim
	for t := t0; t < t1; t++ {
		pos := off + t
		b, r := c.seq.blocks[pos/B], pos%B
		ksrc, vsrc := krows[t*stride:], vrows[t*stride:]
		for h := range p.nHead {
			k, v := p.at(l, 0, h)+r*D, p.at(l, 1, h)+r*D
			ks, vs := ksrc[h*D:(h+1)*D], vsrc[h*D:(h+1)*D]
			if p.f16 {
				kernels.NarrowFloat16(b.f16[k:k+D], ks)
				kernels.NarrowFloat16(b.f16[v:v+D], vs)
				continue
			}
			copy(b.f32[k:k+D], ks)
			copy(b.f32[v:v+D], vs)
		}
	}
}

// Overwrite replaces layer l's keys and values at positions off..off+T-1
// with those of k and v, [KVHeads, n, HeadDim] from position 0 (a
// checkpoint harness's forced cache), rounded as Store rounds.
func (c *Cache) Overwrite(l int, k, v []float32, n, off, T int) {
	p := c.seq.pool
	B, D := p.blockTokens, p.headDim
	for pos := off; pos < off+T; pos++ {
		b, r := c.seq.blocks[pos/B], pos%B
		for h := range p.nHead {
			for kv, src := range [2][]float32{k, v} {
				at, from := p.at(l, kv, h)+r*D, src[(h*n+pos)*D:(h*n+pos+1)*D]
				if p.f16 {
					kernels.NarrowFloat16(b.f16[at:at+D], from)
					continue
				}
				copy(b.f32[at:at+D], from)
			}
		}
	}
}

// Snapshot copies layer's keys and values as [H, Len, D] row-major slices
// (widened from float16 in a float16 pool). An out-of-range layer, or a
// cache that gave back blocks (Release), gives nil slices.
func (c *Cache) Snapshot(layer int) (k, v []float32) {
	p := c.seq.pool
	if layer < 0 || layer >= p.nLayer || c.seq.gone > 0 {
		return nil, nil
	}
	return c.gather(layer, 0), c.gather(layer, 1)
}

func (c *Cache) gather(l, kv int) []float32 {
	p := c.seq.pool
	B, D := p.blockTokens, p.headDim
	out := make([]float32, p.nHead*c.n*D)
	for h := range p.nHead {
		for i := 0; i*B < c.n; i++ {
			n := min(B, c.n-i*B)
			dst := out[(h*c.n+i*B)*D : (h*c.n+i*B+n)*D]
			at := p.at(l, kv, h)
			if p.f16 {
				for j := range dst {
					dst[j] = ggmlnum.Float16To32(c.seq.blocks[i].f16[at+j])
				}
				continue
			}
			copy(dst, c.seq.blocks[i].f32[at:])
		}
	}
	return out
}

// BlockTokens is the positions a block of the cache's pool holds: the
// attention kernels run block by block.
func (c *Cache) BlockTokens() int { return c.seq.pool.blockTokens }

// BlockBufLen is the length of the buf BlockKeys and BlockValues need: a
// block of one head widened from float16, or 0 in a float32 pool, whose
// blocks are returned as they are held.
func (c *Cache) BlockBufLen() int {
	if p := c.seq.pool; p.f16 {
		return p.blockTokens * p.headDim
	}
	return 0
}

// BlockKeys returns block i's keys of KV head h in layer l as float32
// [BlockTokens, HeadDim], widened into buf in a float16 pool. Positions
// past Len in the block hold stale or unwritten values: the caller's
// causal mask must never read them.
func (c *Cache) BlockKeys(l, h, i int, buf []float32) []float32 { return c.blockKV(l, 0, h, i, buf) }

// BlockValues is BlockKeys for the values.
func (c *Cache) BlockValues(l, h, i int, buf []float32) []float32 { return c.blockKV(l, 1, h, i, buf) }

// blockKV returns block i's keys (kv 0) or values (kv 1) of head h in
// layer l as float32 [B, D], widened into buf in a float16 pool.
func (c *Cache) blockKV(l, kv, h, i int, buf []float32) []float32 {
	p := c.seq.pool
	at, n := p.at(l, kv, h), p.blockTokens*p.headDim
	b := c.seq.blocks[i]
	if !p.f16 {
		return b.f32[at : at+n]
	}
	kernels.Widen(buf[:n], b.f16[at:at+n])
	return buf[:n]
}
