// Package keep holds one working buffer between the passes that use it in
// turn. A sync.Pool keeps a buffer per P and a victim copy of each across
// a collection: a serving process whose passes run one at a time but move
// between Ps held four to six copies of a pass's activations (14.5 MB of
// a 124M model's 8-stream working set, measured in session 23), memory
// the RSS bound of a server counts. A Buffer keeps the largest buffer
// given back and nothing else, and lets it go after a collection cycle
// in which nobody used it, so an idle process does not hold a long
// prompt's activations for good.
package keep

import (
	"runtime"
	"sync"
)

// Buffer keeps one []T between uses. The zero value is ready to use; a
// Buffer must not be copied after first use.
type Buffer[T any] struct {
	mu    sync.Mutex
	b     *[]T
	used  bool // Get or Put since the last collection
	armed bool // a collection will call age
}

// Get returns a buffer of n elements with stale contents (the caller
// writes before it reads), the kept one when it is large enough. Callers
// running at once get separate buffers.
func (k *Buffer[T]) Get(n int) *[]T {
	k.mu.Lock()
	b := k.b
	k.b, k.used = nil, true
	k.mu.Unlock()
	if b != nil && cap(*b) >= n {
		*b = (*b)[:n]
		return b
	}
	s := make([]T, n)
	return &s
}

// Put gives b back: it is kept if it is at least as large as the one
// kept, else dropped.
func (k *Buffer[T]) Put(b *[]T) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.b == nil || cap(*b) >= cap(*k.b) {
		k.b = b
	}
	k.used = true
	if !k.armed {
		k.armed = true
		arm(k)
	}
}

// sentinel is allocated to learn of the next collection: its cleanup runs
// once a cycle has found it unreachable. It is 16 bytes so that it is not
// one of the tiny allocations several objects share.
type sentinel struct{ _ [16]byte }

func arm[T any](k *Buffer[T]) {
	runtime.AddCleanup(new(sentinel), (*Buffer[T]).age, k)
}

// age runs after each collection while a buffer is kept: one unused
// through a whole cycle is let go.
func (k *Buffer[T]) age() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.used {
		k.b = nil
	}
	k.used = false
	k.armed = k.b != nil
	if k.armed {
		arm(k)
	}
}
