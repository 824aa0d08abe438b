package kvcache

import (
	"container/list"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrFull is the answer to a reservation or a block the pool cannot
// give without going past its bound.
var ErrFull = errors.New("KV cache full")

// DefaultBlockTokens is the positions a KV block holds unless
// Options says otherwise: vLLM's default, small enough that a
// sequence wastes at most 15 positions, large enough that the attention
// kernels run on whole 4-key panels and the bookkeeping stays negligible.
const DefaultBlockTokens = 16

// Options shape a Pool.
type Options struct {
	// BlockTokens is the positions a block holds, a positive multiple of
	// 4 (the attention kernels' key panel, so that keys held in blocks
	// score and sum with the bits of one contiguous cache); 0 means
	// DefaultBlockTokens.
	BlockTokens int
	// MaxTokens bounds the positions all the pool's caches hold at once;
	// 0 leaves it unbounded.
	MaxTokens int
	// Float16 stores keys and values rounded to float16 (round to nearest
	// even) and widens them exactly when read: half the memory, at the cost
	// the reference profile f16-kv measures. The arithmetic stays float32.
	Float16 bool
	// PrefixCache keeps the blocks of finished sequences, found again by
	// the tokens they hold, so a prompt that shares their prefix reuses
	// them instead of recomputing it (Cache.ReusePrefix). Needs MaxTokens:
	// kept blocks are evicted, least recently used first, when the bound
	// needs their room or when they pass PrefixCacheTokens.
	PrefixCache bool
	// PrefixCacheTokens bounds the positions kept for reuse by no running
	// sequence, so that an idle server's memory is this much, not the
	// whole bound; 0 leaves only MaxTokens.
	PrefixCacheTokens int
	// SpareLinger is how long an ended block's memory stays mapped for
	// the next block (a fresh mapping pays a page fault a page) before it
	// is given back; 0 means DefaultSpareLinger, negative gives it back at
	// once.
	SpareLinger time.Duration
	// FreeBehindWindow lets Cache.Release give back a sequence's blocks
	// that every layer's sliding window has left. Off, a cache keeps every
	// position it was given, for a harness that reads them all back
	// (Cache.Snapshot, checkpoint 3).
	FreeBehindWindow bool
}

// Pool holds the keys and values of a model's sequences in blocks of
// BlockTokens positions, allocated as a sequence grows and returned when
// it ends, so memory follows the tokens held rather than sequences ×
// context. A block holds, for each layer, K then V, each [Hkv, B, D], so
// one head's keys in a block are a contiguous [B, D] matrix for the
// attention kernels. It is safe for concurrent use by distinct caches.
type Pool struct {
	nLayer, nHead, headDim, blockTokens int
	capacity                            int // a cache's positions: the model's context
	maxBlocks                           int // 0: unbounded
	maxIdle                             int // kept blocks beyond it are evicted; 0: only maxBlocks bounds them
	f16, prefix, freeBehind             bool
	blockElems                          int // floats (or halves) a block

	mu       sync.Mutex
	held     int                   // blocks allocated: referenced plus kept
	reserved int                   // Σ over caches of max(reservation, blocks held)
	nextID   uint64                // block ids are never reused, so a prefix key never names a stale parent
	index    map[blockKey]*kvBlock // full blocks by their prefix, when prefix caching
	idle     list.List             // kept blocks nobody references, least recently used at the front
	linger   time.Duration         // how long spare memory waits for a block; <= 0: not kept
	spare    []blockMem            // ended blocks' memory, oldest first (spare.go)
	trim     *time.Timer           // gives back spares past the linger; nil when none wait
	stats    Stats
	freed    chan struct{} // closed (and replaced) when blocks or promises are given back
}

// blockKey finds a full block by the block before it, its tokens' hash
// and the variant of the cache that computed it (Cache.SetVariant); the
// tokens themselves are compared on every hit, so a hash collision costs
// a recomputation, never wrong keys and values.
type blockKey struct {
	parent  uint64
	hash    uint64
	variant uint8
}

// kvBlock is one block's memory and bookkeeping. Blocks in the index are
// immutable: a cache writing into one gets a private copy first.
type kvBlock struct {
	id uint64
	blockMem
	refs   int
	key    blockKey
	tokens []int32       // the positions' tokens, once indexed
	idle   *list.Element // in Pool.idle while refs == 0
}

// Stats are a pool's counters, for /health and metrics.
type Stats struct {
	BlockTokens  int   `json:"block_tokens"`
	BlockBytes   int64 `json:"block_bytes"`
	MaxBlocks    int   `json:"max_blocks"`    // 0: unbounded
	HeldBlocks   int   `json:"held_blocks"`   // allocated now: in use plus kept for reuse
	IdleBlocks   int   `json:"idle_blocks"`   // kept for prefix reuse, evictable
	SpareBlocks  int   `json:"spare_blocks"`  // ended blocks' memory still mapped for the next block, not counted as held
	PeakBlocks   int   `json:"peak_blocks"`   // the most held at once: the tokens a process's peak memory had to hold
	Evictions    int64 `json:"evictions"`     // kept blocks given up for room
	CachedTokens int64 `json:"cached_tokens"` // prompt positions served from kept blocks
}

// MappedBytes is the memory of the blocks mapped: held (used and kept)
// and spare.
func (s Stats) MappedBytes() int64 { return int64(s.HeldBlocks+s.SpareBlocks) * s.BlockBytes }

// NewPool returns an empty pool for the caches of a model of shape s.
func NewPool(s Shape, opt Options) (*Pool, error) {
	B := opt.BlockTokens
	if B == 0 {
		B = DefaultBlockTokens
	}
	if B < 0 || B%4 != 0 {
		return nil, fmt.Errorf("KV cache block of %d positions: must be a positive multiple of 4", B)
	}
	if opt.MaxTokens < 0 || opt.PrefixCacheTokens < 0 {
		return nil, fmt.Errorf("KV cache of %d positions, %d kept for reuse: must not be negative", opt.MaxTokens, opt.PrefixCacheTokens)
	}
	if opt.PrefixCache && opt.MaxTokens == 0 {
		return nil, errors.New("KV prefix cache without a bound on the positions held: it would keep every block")
	}
	p := &Pool{
		nLayer: s.Layers, nHead: s.KVHeads, headDim: s.HeadDim, blockTokens: B,
		capacity: s.Positions, maxBlocks: (opt.MaxTokens + B - 1) / B, maxIdle: (opt.PrefixCacheTokens + B - 1) / B,
		f16: opt.Float16, prefix: opt.PrefixCache, freeBehind: opt.FreeBehindWindow, linger: opt.SpareLinger,
	}
	if p.linger == 0 {
		p.linger = DefaultSpareLinger
	}
	p.blockElems = 2 * p.nLayer * p.nHead * B * p.headDim
	p.freed = make(chan struct{})
	if p.prefix {
		p.index = make(map[blockKey]*kvBlock)
	}
	p.stats.BlockTokens, p.stats.BlockBytes, p.stats.MaxBlocks = B, p.BlockBytes(), p.maxBlocks
	return p, nil
}

// MaxTokens is the bound on the positions held, 0 if none.
func (p *Pool) MaxTokens() int { return p.maxBlocks * p.blockTokens }

// wake tells the reservations waiting that room may have come back.
// p.mu is held.
func (p *Pool) wake() {
	close(p.freed)
	p.freed = make(chan struct{})
}

// BlockTokens is the positions a block holds.
func (p *Pool) BlockTokens() int { return p.blockTokens }

// PrefixCache says the pool keeps full blocks for prompts that share them.
func (p *Pool) PrefixCache() bool { return p.prefix }

// Float16 says the pool stores keys and values as float16.
func (p *Pool) Float16() bool { return p.f16 }

// BlockBytes is the memory of one block.
func (p *Pool) BlockBytes() int64 {
	if p.f16 {
		return 2 * int64(p.blockElems)
	}
	return 4 * int64(p.blockElems)
}

// Stats returns the pool's counters.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.HeldBlocks, s.IdleBlocks, s.SpareBlocks = p.held, p.idle.Len(), len(p.spare)
	return s
}

// blocksFor is the blocks n positions need.
func (p *Pool) blocksFor(n int) int { return (n + p.blockTokens - 1) / p.blockTokens }

// alloc returns a new block with one reference, evicting the least
// recently used kept block when the bound is reached; its memory is a
// spare's if one waits (stale: written before it is read), else fresh.
// p.mu is held.
func (p *Pool) alloc() (*kvBlock, error) {
	if p.maxBlocks > 0 && p.held >= p.maxBlocks {
		if p.idle.Len() == 0 {
			return nil, fmt.Errorf("%w: all %d blocks of %d positions are in use", ErrFull, p.maxBlocks, p.blockTokens)
		}
		p.drop(p.idle.Remove(p.idle.Front()).(*kvBlock))
		p.stats.Evictions++
	}
	b := &kvBlock{refs: 1}
	switch {
	case p.takeSpare(b):
	case p.f16:
		b.f16, b.free = mapHalves(p.blockElems)
	default:
		b.f32, b.free = mapFloats(p.blockElems)
	}
	p.nextID++
	b.id = p.nextID
	p.held++
	p.stats.PeakBlocks = max(p.stats.PeakBlocks, p.held)
	return b, nil
}

// drop forgets a block and makes its memory a spare. p.mu is held.
func (p *Pool) drop(b *kvBlock) {
	if b.tokens != nil {
		delete(p.index, b.key)
	}
	p.release(b)
	b.blockMem, b.idle = blockMem{}, nil
	p.held--
}

// unref gives up one reference; the block is kept for reuse if it is
// indexed, else freed. p.mu is held.
func (p *Pool) unref(b *kvBlock) {
	b.refs--
	if b.refs > 0 {
		return
	}
	if b.tokens != nil && p.prefix {
		b.idle = p.idle.PushBack(b)
		if p.maxIdle > 0 && p.idle.Len() > p.maxIdle {
			p.drop(p.idle.Remove(p.idle.Front()).(*kvBlock))
			p.stats.Evictions++
		}
		return
	}
	p.drop(b)
}

// ref takes a reference on a block found in the index. p.mu is held.
func (p *Pool) ref(b *kvBlock) {
	if b.refs == 0 {
		p.idle.Remove(b.idle)
		b.idle = nil
	}
	b.refs++
}
