package tokenizer

import (
	"hash/maphash"
	"strings"
	"sync"
)

// cache remembers the tokens of recently seen pieces. Text repeats the same
// words constantly, and a map lookup is far cheaper than merging.
//
// It is split into shards, each behind its own RWMutex, so that many
// goroutines encoding at once rarely contend. Size is bounded: a full shard
// drops an arbitrary entry (Go's randomised map iteration makes that a
// random eviction, which is nearly as good as LRU for word frequencies and
// needs no bookkeeping on the read path).
type cache struct {
	seed     maphash.Seed
	shards   [cacheShards]cacheShard
	perShard int
}

const (
	cacheShards = 32
	// cacheEntries bounds the whole cache; with maxCachedPiece this keeps it
	// to a few megabytes.
	cacheEntries = 1 << 16
	// Longer pieces are rare and would make the cache's size unbounded in
	// bytes.
	maxCachedPiece = 64
)

type cacheShard struct {
	mu sync.RWMutex
	m  map[string][]int32
}

func newCache() *cache {
	c := &cache{seed: maphash.MakeSeed(), perShard: cacheEntries / cacheShards}
	for i := range c.shards {
		c.shards[i].m = make(map[string][]int32)
	}
	return c
}

func (c *cache) shard(key string) *cacheShard {
	return &c.shards[maphash.String(c.seed, key)%cacheShards]
}

func (c *cache) get(key string) ([]int32, bool) {
	s := c.shard(key)
	s.mu.RLock()
	v, ok := s.m[key]
	s.mu.RUnlock()
	return v, ok
}

// put stores v, which must not be modified afterwards. key is copied: it
// usually points into the caller's text, which must not be kept alive.
func (c *cache) put(key string, v []int32) {
	key = strings.Clone(key)
	s := c.shard(key)
	s.mu.Lock()
	if len(s.m) >= c.perShard {
		for k := range s.m {
			delete(s.m, k)
			break
		}
	}
	s.m[key] = v
	s.mu.Unlock()
}
