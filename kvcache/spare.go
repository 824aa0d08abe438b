package kvcache

import "time"

// DefaultSpareLinger is how long the memory of an ended block stays mapped
// for the next block unless Options says otherwise: long enough to
// carry a server from one request to the next under load, short enough
// that an idle server's memory follows the tokens it holds.
const DefaultSpareLinger = 2 * time.Second

// blockMem is a block's memory without its bookkeeping (kvBlock holds
// one); as a spare it is mapped, written by an earlier sequence (its
// contents stale: nothing reads a position before it is written), waiting
// to be a block again.
//
// Why keep it: a fresh mapping faults each page in on first write, and an
// unmapping interrupts every thread that ran on it, so a 124M model's
// 128-token prefill, which writes 9.4 MB of keys and values, took 2,400
// faults and 3.5 ms of system time (1.5-2.5% of it on this project's
// 2-core Zen 4, where a fault costs 1.5 µs idle and 6-12 µs under load),
// and a server paid that again for every request
// (scripts/bench/notes/20-prefill-rest.md). A spare never raises memory
// above the pool's peak: every spare was a held block, and an allocation
// takes a spare before it maps anew, so held + spare blocks never exceed
// the most blocks held at once (Stats.PeakBlocks).
type blockMem struct {
	f32   []float32
	f16   []uint16
	free  func()
	since time.Time // when it became spare; zero in a block
}

// takeSpare gives a new block the most recently freed memory, if any (its
// pages are the likeliest still in cache). p.mu is held.
func (p *Pool) takeSpare(b *kvBlock) bool {
	n := len(p.spare)
	if n == 0 {
		return false
	}
	s := p.spare[n-1]
	p.spare[n-1] = blockMem{}
	p.spare = p.spare[:n-1]
	s.since = time.Time{}
	b.blockMem = s
	return true
}

// release keeps a dropped block's memory as a spare, or gives it back when
// spares do not linger. p.mu is held.
func (p *Pool) release(b *kvBlock) {
	if p.linger <= 0 {
		b.free()
		return
	}
	m := b.blockMem
	m.since = time.Now()
	p.spare = append(p.spare, m)
	if p.trim == nil {
		p.trim = time.AfterFunc(p.linger, p.trimSpares)
	}
}

// trimSpares gives back the spares unused for the linger and waits for
// the next one to age.
func (p *Pool) trimSpares() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.trim = nil
	cut := time.Now().Add(-p.linger)
	n := 0
	for ; n < len(p.spare) && !p.spare[n].since.After(cut); n++ { // oldest first
		p.spare[n].free()
	}
	rest := copy(p.spare, p.spare[n:])
	clear(p.spare[rest:])
	p.spare = p.spare[:rest]
	if rest > 0 {
		p.trim = time.AfterFunc(time.Until(p.spare[0].since.Add(p.linger)), p.trimSpares)
	}
}
