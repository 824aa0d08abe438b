package server

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/llorch/llorch-check/kvcache"
	"github.com/llorch/llorch-check/model"
)

// A ready batch waits for a running sequence that has not submitted its
// next step yet (still sampling, or writing to a slow client) for at most
// the duration of the last step: leaving it out would cost a whole extra
// pass over the weights for its step, which is no cheaper than the wait.
// maxJoinWait caps that wait, so a laggard costs the others some latency,
// never a stall. (On GPT-2 small with 2 cores sampling takes ~3.5 ms a
// token, so 4 sequences resubmit ~7 ms after a step; a 5 ms cap split most
// batches and lost a third of the throughput.)
const maxJoinWait = 50 * time.Millisecond

// batcher joins the decode steps of the sequences running on one model
// (their generation.ModelDecoders) into single Model.DecodeBatch calls, so B sequences stream the weights
// once per step instead of B times. Decoding is bandwidth-bound, so this
// is where concurrent requests get their throughput (scripts/bench/NOTES.md).
//
// A batch starts as soon as every member (a sequence in its decode loop)
// has submitted a step, so a lone sequence steps at once; if some member
// is late, the others wait for it at most one step's duration (see
// maxJoinWait). No goroutine lives between batches: each batch runs on a
// goroutine of its own, and a timer only while a wait is armed.
type batcher struct {
	m       *model.Model
	chunk   int // prompt positions a step carries (chunked prefill); 0: prefill alone
	observe func(batchSize int)

	mu       sync.Mutex
	members  int
	pending  []*step
	busy     bool          // a batch is running; its caches are in use
	lastStep time.Duration // how long the last batch took: the join window
	timer    *time.Timer
	gen      int // bumped per batch, so a stale timer firing does nothing
}

type step struct {
	cache  *kvcache.Cache
	tokens []int           // one decode token, or a chunk of a prompt
	done   chan stepResult // buffered: the batch never blocks on a reader
}

type stepResult struct {
	logits []float32
	err    error
}

func newBatcher(m *model.Model, chunk int, observe func(int)) *batcher {
	return &batcher{m: m, chunk: chunk, observe: observe, lastStep: time.Millisecond}
}

// Join and Leave bracket a sequence's decode loop; only members are
// waited for (generation.Batcher).
func (b *batcher) Join() {
	b.mu.Lock()
	b.members++
	b.mu.Unlock()
}

func (b *batcher) Leave() {
	b.mu.Lock()
	b.members--
	b.maybeStart()
	b.mu.Unlock()
}

// Step appends token to cache in the next batch and returns its logits. If
// ctx ends while the step waits for its batch it returns at once; if the
// batch is already running it waits for that one step, because the batch
// is writing the cache.
func (b *batcher) Step(ctx context.Context, cache *kvcache.Cache, token int) ([]float32, error) {
	return b.step(ctx, cache, []int{token})
}

// Prefill runs a prompt (what the prefix cache did not hold) through the
// batches chunk by chunk, each chunk's rows in the same pass as the
// running sequences' decode steps: a long prompt costs each of them a
// chunk's time a step instead of a whole prefill beside them, and shares
// their pass over the weights instead of a second one competing for the
// cores. The caller is a member (Join). It returns the last position's
// logits, in the cache's buffer. Chunking changes no bits: every row of a
// pass is computed on its own.
func (b *batcher) Prefill(ctx context.Context, cache *kvcache.Cache, tokens []int) ([]float32, error) {
	chunk := b.chunk
	if chunk <= 0 {
		chunk = len(tokens)
	}
	var logits []float32
	for c0 := 0; c0 < len(tokens); c0 += chunk {
		var err error
		if logits, err = b.step(ctx, cache, tokens[c0:min(c0+chunk, len(tokens))]); err != nil {
			return nil, err
		}
	}
	return logits, nil
}

// PrefillChunk is the positions a step carries; 0 means prompts run
// alone, outside the batches (generation.ModelDecoder asks).
func (b *batcher) PrefillChunk() int { return b.chunk }

func (b *batcher) step(ctx context.Context, cache *kvcache.Cache, tokens []int) ([]float32, error) {
	st := &step{cache: cache, tokens: tokens, done: make(chan stepResult, 1)}
	b.mu.Lock()
	b.pending = append(b.pending, st)
	b.maybeStart()
	b.mu.Unlock()
	select {
	case r := <-st.done:
		return r.logits, r.err
	case <-ctx.Done():
	}
	b.mu.Lock()
	if i := slices.Index(b.pending, st); i >= 0 {
		b.pending = slices.Delete(b.pending, i, i+1)
		b.mu.Unlock()
		return nil, ctx.Err()
	}
	b.mu.Unlock()
	<-st.done
	return nil, ctx.Err()
}

// maybeStart runs the pending steps if every member has submitted, and
// otherwise arms the join window. b.mu is held.
func (b *batcher) maybeStart() {
	if b.busy || len(b.pending) == 0 {
		return
	}
	if len(b.pending) >= b.members {
		b.start()
		return
	}
	if b.timer == nil {
		gen := b.gen
		b.timer = time.AfterFunc(min(b.lastStep, maxJoinWait), func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			if b.gen != gen {
				return // a batch started meanwhile and stopped this timer too late
			}
			b.timer = nil
			if !b.busy && len(b.pending) > 0 {
				b.start()
			}
		})
	}
}

// start hands the pending steps to a new batch. b.mu is held.
func (b *batcher) start() {
	batch := b.pending
	b.pending = nil
	b.busy = true
	b.gen++
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	go b.run(batch)
}

func (b *batcher) run(batch []*step) {
	t0 := time.Now()
	logits, err := b.decode(batch)
	b.observe(len(batch))
	for i, st := range batch {
		r := stepResult{err: err}
		if err == nil {
			r.logits = logits[i]
		}
		st.done <- r
	}
	b.mu.Lock()
	b.busy = false
	b.lastStep = time.Since(t0)
	// The sequences just answered are sampling their next tokens: the
	// window starts now, so they can rejoin the steps that queued meanwhile.
	b.maybeStart()
	b.mu.Unlock()
}

// decode runs the batch without any one request's context: the batch
// belongs to all of them, and one step is short.
func (b *batcher) decode(batch []*step) (logits [][]float32, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("decode batch of %d: panic: %v", len(batch), p)
		}
	}()
	caches := make([]*kvcache.Cache, len(batch))
	tokens := make([][]int, len(batch))
	for i, st := range batch {
		caches[i], tokens[i] = st.cache, st.tokens
	}
	return b.m.StepBatch(context.Background(), caches, tokens)
}
