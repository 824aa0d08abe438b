// Package gctune keeps the garbage a process whose live heap is mostly
// model weights lets accumulate small: at Go's default GOGC the heap grows
// to twice the weights before collecting, and RSS with it (serve, and run,
// whose comparisons leave reference tensors behind: Qwen2.5-0.5B's run
// peaked at 1.81 GB over 0.99 GB of weights).
package gctune

import (
	"math"
	"runtime"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"sync/atomic"
)

// gcHeadroom is the garbage a serving process lets accumulate between
// collections. Go's default (GOGC=100) lets garbage grow to the live heap,
// and the live heap of a server is mostly the weights (quantised and float16
// matrices live on it): 135 MB of GPT-2 Q8_0 let ~150 MB of per-request
// garbage sit in RSS (bench-serve, session 19). The weights hold no
// pointers, so a collection costs little more than marking the rest: 48 MB
// of headroom and 9 MB served 8 streaming clients at the same rate, at
// peaks of 361 and 320 MB (session 22), 16 and 8 MB at 250-255 and
// 241-247 MB (session 23), and what the garbage takes comes out of the
// 10% over the model and its KV cache a server should need.
const gcHeadroom = 8 << 20

// Percent is the GOGC for a process whose live heap, once the
// model is loaded, is live bytes (mostly the weights, unless a weights
// cache maps them outside the heap): about gcHeadroom of garbage, between
// 1 and 100 percent (a floor of 10 let a 4 GB model keep 400 MB of
// garbage; a ceiling of 100 keeps a small heap from collecting for every
// few kilobytes).
func Percent(live int64) int {
	if live <= 0 {
		return 100
	}
	return int(min(100, max(1, 100*gcHeadroom/live)))
}

// Tune keeps GOGC at Percent of the live heap after every collection
// until stop is called: the live heap of a server moves (a model whose
// weights a cache maps outside the heap starts at a few megabytes and
// holds tens under load), and a GOGC fixed at start-up would let the
// garbage follow it. pct is the GOGC it starts with.
func Tune() (pct int, stop func()) {
	t := &gcTuner{last: -2}
	t.tune()
	pct = t.last
	t.arm()
	return pct, func() {
		t.stopped.Store(true)
		debug.SetMemoryLimit(math.MaxInt64)
	}
}

type gcTuner struct {
	last    int
	stopped atomic.Bool
}

// gcSentinel is allocated to learn of the next collection; 16 bytes, so
// not a tiny allocation shared with others.
type gcSentinel struct{ _ [16]byte }

func (t *gcTuner) arm() {
	runtime.AddCleanup(new(gcSentinel), (*gcTuner).collected, t)
}

// collected runs after each collection (cleanups run one at a time).
func (t *gcTuner) collected() {
	if t.stopped.Load() {
		return
	}
	t.tune()
	t.arm()
}

func (t *gcTuner) tune() {
	s := []rtmetrics.Sample{
		{Name: "/gc/heap/live:bytes"},
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
	}
	rtmetrics.Read(s)
	for _, v := range s {
		if v.Value.Kind() != rtmetrics.KindUint64 {
			return
		}
	}
	if pct := Percent(int64(s[0].Value.Uint64())); pct != t.last {
		debug.SetGCPercent(pct)
		t.last = pct
	}
	inUse := s[1].Value.Uint64() - s[2].Value.Uint64() - s[3].Value.Uint64()
	debug.SetMemoryLimit(Limit(int64(inUse)))
}

// limitSlack is what Limit lets the runtime hold beyond the memory in use
// at the last collection: the garbage GOGC allows (gcHeadroom) and as much
// again of free pages.
const limitSlack = 4 * gcHeadroom

// Limit is the soft memory limit for a process using inUse bytes of the
// runtime's memory after a collection: freed heap pages are otherwise
// kept for reuse up to 5-10% over the heap goal (the scavenger's own
// margin), which, when the heap is mostly weights, is tens of megabytes
// over what a process holds (Qwen2.5-0.5B's run kept 55 MB of free pages
// over 0.97 GB of heap, bench notes 34). Under a limit the scavenger
// returns free pages down to 95% of it, so they stay within limitSlack.
// The limit is raised at each collection as the heap grows; a burst
// beyond it costs extra collections, never an error.
func Limit(inUse int64) int64 {
	return inUse + limitSlack
}
