package server

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/llorch/llorch-check/generation"
)

// ErrQueueFull is Acquire's answer when every slot is busy and the queue is
// at its limit: the caller sheds the request (429) instead of queueing it.
var ErrQueueFull = errors.New("all slots busy and the queue is full")

// Scheduler admits sequences to a fixed set of slots: at most len(slots)
// run, at most maxQueue wait in FIFO order, the rest are refused. Every
// route goes through it, so one limit covers the whole server.
//
// A Slot owns one generation.ModelDecoder (one KV cache) for its
// lifetime, so memory is bounded by the slot count and caches are reused
// rather than reallocated per request. The slot's decoder sends its decode
// steps to the engine's batcher, which joins the steps of all running slots
// into one pass over the weights (batcher.go); the decoder tells the
// batcher when its sequence stops, so the routes and this admission logic
// do not see it.
type Scheduler struct {
	mu       sync.Mutex
	free     []*Slot
	waiting  []chan *Slot
	running  int
	maxQueue int
	onChange func(running, queued int)
}

// Slot is the right to run one sequence at a time until Release.
type Slot struct {
	s   *Scheduler
	dec *generation.ModelDecoder
}

// NewScheduler makes parallel slots and a queue of maxQueue; onChange (may
// be nil) sees every change of the running and queued counts.
func NewScheduler(parallel, maxQueue int, onChange func(running, queued int)) *Scheduler {
	s := &Scheduler{maxQueue: maxQueue, onChange: onChange}
	for range parallel {
		s.free = append(s.free, &Slot{s: s})
	}
	return s
}

// Acquire returns a free slot, waits in the queue for one, or fails at
// once with ErrQueueFull. A ctx that ends while waiting leaves the queue
// (ctx's error is returned), so cancelled requests never hold a place.
func (s *Scheduler) Acquire(ctx context.Context) (*Slot, error) {
	s.mu.Lock()
	if n := len(s.free); n > 0 {
		sl := s.free[n-1]
		s.free = s.free[:n-1]
		s.running++
		s.changed()
		s.mu.Unlock()
		return sl, nil
	}
	if len(s.waiting) >= s.maxQueue {
		s.mu.Unlock()
		return nil, ErrQueueFull
	}
	ch := make(chan *Slot, 1)
	s.waiting = append(s.waiting, ch)
	s.changed()
	s.mu.Unlock()

	select {
	case sl := <-ch:
		return sl, nil
	case <-ctx.Done():
		s.mu.Lock()
		if i := slices.Index(s.waiting, ch); i >= 0 {
			s.waiting = slices.Delete(s.waiting, i, i+1)
			s.changed()
			s.mu.Unlock()
			return nil, ctx.Err()
		}
		s.mu.Unlock()
		// Release handed us a slot just as ctx ended: pass it on.
		(<-ch).Release()
		return nil, ctx.Err()
	}
}

// Full reports whether Acquire would fail with ErrQueueFull now: every
// slot busy and the queue at its limit. A route asks before it reads its
// body, to refuse for the cost of a lock (Server.shed).
func (s *Scheduler) Full() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.free) == 0 && len(s.waiting) >= s.maxQueue
}

// Release gives the slot to the longest waiter, or back to the free set.
func (sl *Slot) Release() {
	if sl.dec != nil {
		sl.dec.Release() // an idle slot holds no KV blocks
	}
	s := sl.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.waiting) > 0 {
		ch := s.waiting[0]
		s.waiting = slices.Delete(s.waiting, 0, 1)
		ch <- sl // buffered: never blocks
		s.changed()
		return
	}
	s.running--
	s.free = append(s.free, sl)
	s.changed()
}

// Decoder is the slot's decoder for e's model, made on first use.
func (sl *Slot) Decoder(e *engine) *generation.ModelDecoder {
	if sl.dec == nil {
		sl.dec = generation.NewBatchedDecoder(e.m, e.pool, e.batch)
	}
	return sl.dec
}

// Stats are the running and queued counts.
func (s *Scheduler) Stats() (running, queued int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running, len(s.waiting)
}

func (s *Scheduler) changed() {
	if s.onChange != nil {
		s.onChange(s.running, len(s.waiting))
	}
}
