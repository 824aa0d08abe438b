package kvcache

import "slices"

// Commit makes positions Len()..Len()+len(tokens)-1, grown and written by
// a pass that succeeded, part of the sequence; tokens are the tokens at
// those positions. A prefix-caching pool indexes every
// block this fills, by its parent block and its tokens, so that a later
// prompt with the same prefix finds it.
func (c *Cache) Commit(tokens []int) {
	from := c.n
	c.n += len(tokens)
	for _, t := range tokens {
		c.tokens = append(c.tokens, int32(t))
	}
	p := c.seq.pool
	if !p.prefix {
		return
	}
	B := p.blockTokens
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := from / B; (i+1)*B <= c.n; i++ {
		b := c.seq.blocks[i]
		if b.tokens != nil {
			continue // reused, or indexed by an earlier pass
		}
		key := blockKey{hash: hashTokens(c.tokens[i*B : (i+1)*B]), variant: c.variant}
		if i > 0 {
			parent := c.seq.blocks[i-1]
			if parent == nil || parent.tokens == nil {
				return // the prefix before it is not findable (or given back by Release), so neither is it
			}
			key.parent = parent.id
		}
		if _, taken := p.index[key]; taken {
			continue // an identical block (or a colliding one) is already there
		}
		b.key, b.tokens = key, slices.Clone(c.tokens[i*B:(i+1)*B])
		p.index[key] = b
	}
}

// ReusePrefix starts an empty cache with the longest run of indexed blocks
// that holds tokens' prefix, and returns the positions they hold: the
// caller runs only tokens[n:]. At least one token is always left to run,
// so the last position's logits come from a pass. Keys and values reused
// are the bits a pass over the prefix would write (every row of a pass is
// computed on its own), so the logits are the same with or without reuse.
// Only blocks computed by caches of c's variant are reused. Without
// prefix caching, or on a cache that is not empty, it returns 0.
func (c *Cache) ReusePrefix(tokens []int) int {
	p := c.seq.pool
	if !p.prefix || c.n != 0 || len(c.seq.blocks) != 0 {
		return 0
	}
	B := p.blockTokens
	want := make([]int32, 0, B)
	p.mu.Lock()
	defer p.mu.Unlock()
	var parent uint64
	for i := 0; (i+1)*B < len(tokens) && (i+1)*B <= c.capacity; i++ {
		want = want[:0]
		for _, t := range tokens[i*B : (i+1)*B] {
			want = append(want, int32(t))
		}
		b, ok := p.index[blockKey{parent: parent, hash: hashTokens(want), variant: c.variant}]
		if !ok || !slices.Equal(b.tokens, want) {
			break
		}
		held := len(c.seq.blocks)
		if p.maxBlocks > 0 && held >= c.seq.reservation && p.reserved >= p.maxBlocks {
			break // past the reservation with no room left: compute the rest
		}
		if held >= c.seq.reservation {
			p.reserved++
		}
		p.ref(b)
		c.seq.blocks = append(c.seq.blocks, b)
		c.tokens = append(c.tokens, want...)
		parent = b.id
	}
	c.n = len(c.seq.blocks) * B
	p.stats.CachedTokens += int64(c.n)
	return c.n
}

// hashTokens is FNV-1a over the tokens' bytes: a map key only, every hit
// is checked against the block's tokens.
func hashTokens(tokens []int32) uint64 {
	h := uint64(14695981039346656037)
	for _, t := range tokens {
		for s := 0; s < 32; s += 8 {
			h ^= uint64(byte(t >> s))
			h *= 1099511628211
		}
	}
	return h
}

// Tokens is the tokens at positions 0..Len()-1, those of positions before
// Start included: what a pass that recomputes the sequence runs again.
func (c *Cache) Tokens() []int {
	out := make([]int, len(c.tokens))
	for i, t := range c.tokens {
		out[i] = int(t)
	}
	return out
}

// SetVariant says how the model computes the keys this cache holds and
// will hold, where the same tokens at the same positions can be computed
// two ways: a longrope model rotates a sequence with its short factors
// until the sequence passes the pretrained context, and with the long
// ones (variant 1) after. The prefix index keeps the variants apart, so
// a block is reused only by a cache of the variant that computed it. An
// emptied cache (Reset, Truncate to 0, Close) is of variant 0.
func (c *Cache) SetVariant(v uint8) { c.variant = v }

// Variant is the cache's SetVariant.
func (c *Cache) Variant() uint8 { return c.variant }
