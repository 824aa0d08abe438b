package model

import (
	"sync"

	"github.com/llorch/llorch-check/internal/keep"
)

// slicePool keeps working buffers between passes: a decode step then
// touches the same cache-warm kilobytes every time instead of fresh memory
// the allocator must zero (10% of a Q8_0 decode step, measured). A buffer
// is handed out with stale contents; every user writes before it reads.
type slicePool[T any] struct{ p sync.Pool }

// get returns a buffer of length n.
func (sp *slicePool[T]) get(n int) *[]T {
	if b, ok := sp.p.Get().(*[]T); ok && cap(*b) >= n {
		*b = (*b)[:n]
		return b
	}
	b := make([]T, n)
	return &b
}

func (sp *slicePool[T]) put(b *[]T) { sp.p.Put(b) }

// One pool per use, so a small request never takes a pass's large buffer.
// The attention workers' buffers are one per worker at a time, so a
// sync.Pool's copy per P is what they need; a pass's buffers are one per
// pass, and passes run one after another, so one is kept (keep.Buffer).
var (
	passBuffers  keep.Buffer[float32] // a pass's activations
	partBuffers  keep.Buffer[float32] // one column block's product, while the pass's buffer is out
	batchLogits  keep.Buffer[float32] // a batched step's logits, before each row goes to its cache
	scoreBuffers slicePool[float32]   // one attention worker's scores
	expBuffers   slicePool[float64]   // its softmax terms
)
