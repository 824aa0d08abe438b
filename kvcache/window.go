package kvcache

// Release says that no pass of the cache will read the positions before
// pos again (every layer of its model has a sliding window, and the next
// query's window starts there), and, in a pool made with
// Options.FreeBehindWindow, gives the blocks wholly before pos back to the
// pool: a long generation then holds about a window's positions, not all
// it has seen, as llama.cpp's SWA cache and vLLM's sliding-window block
// manager do. Without that option it does nothing.
//
// A block given back is unreferenced like one Truncate drops: a block a
// prefix-caching pool indexed stays findable (and keeps its memory, as
// an idle block the bound evicts) for a prompt that starts with the same
// tokens, since its keys and values depend on those tokens alone; the
// sequence's later blocks are no longer indexed (Commit needs the block
// before one to name it). The sequence's reservation is unchanged.
// Afterwards Start is where the blocks held begin, Snapshot gives nil, and
// Truncate cannot go below Start.
func (c *Cache) Release(pos int) {
	s := c.seq
	p := s.pool
	if !p.freeBehind {
		return
	}
	n := min(pos, c.n) / p.blockTokens // never the block the next position falls in
	if n <= s.gone {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	before := max(s.reservation, s.live())
	for i := s.gone; i < n; i++ {
		p.unref(s.blocks[i])
		s.blocks[i] = nil
	}
	s.gone = n
	p.reserved += max(s.reservation, s.live()) - before
	p.wake()
}

// Start is the first position whose block the cache still holds: 0 unless
// Release gave blocks back. Positions Start..Len-1 are held.
func (c *Cache) Start() int { return c.seq.gone * c.seq.pool.blockTokens }
