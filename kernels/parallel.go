package kernels

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// ParallelMinWork is the multiply-add count below which goroutines cost
// more than they save.
const ParallelMinWork = 1 << 16

// ParallelFor runs fn(0..n-1) on up to GOMAXPROCS goroutines, the caller
// being one of them, each taking the next index as it becomes free.
//
// A decode step is ~50 of these calls of 20–100 µs each; waking a parked
// goroutine costs about as much, and left a core idle a third of the step.
// So the other goroutines are a pool that spins briefly between calls
// before parking, as llama.cpp's threads do. A call made while the pool is
// busy (nested, or from another goroutine) starts goroutines of its own.
func ParallelFor(n int, fn func(i int)) {
	workers := min(n, runtime.GOMAXPROCS(0))
	if workers <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	if pool.tryRun(n, workers-1, fn) {
		return
	}
	spawnFor(n, workers, fn)
}

// spawnFor is ParallelFor with goroutines started for this call only.
func spawnFor(n, workers int, fn func(i int)) {
	var next atomic.Int64
	work := func() {
		for {
			i := int(next.Add(1) - 1)
			if i >= n {
				return
			}
			fn(i)
		}
	}
	var wg sync.WaitGroup
	for range workers - 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			work()
		}()
	}
	work()
	wg.Wait()
}

// spinFor is how long a pool goroutine polls for the next call before it
// parks: longer than the gaps between a decode step's calls (attention,
// layer norm: a few µs to tens of µs), short enough that an idle server
// costs nothing.
const spinFor = 200 * time.Microsecond

// job is one ParallelFor call run by the pool.
type job struct {
	fn      func(int)
	n       int64
	next    atomic.Int64  // next index to take
	done    atomic.Int64  // indices finished
	helpers atomic.Int32  // pool goroutines still allowed to join
	over    chan struct{} // closed by whoever finishes the last index
}

func (j *job) work() {
	for {
		i := j.next.Add(1) - 1
		if i >= j.n {
			return
		}
		j.fn(int(i))
		if j.done.Add(1) == j.n {
			close(j.over)
		}
	}
}

type workerPool struct {
	busy    atomic.Bool         // a call owns the pool
	current atomic.Pointer[job] // the owner's job, nil between calls
	gen     atomic.Uint64       // bumped for every job
	mu      sync.Mutex
	size    int           // goroutines started
	parked  atomic.Int32  // goroutines waiting on wake
	wake    chan struct{} // one token wakes one parked goroutine
}

var pool = workerPool{wake: make(chan struct{}, 256)}

// tryRun runs fn over 0..n-1 with up to helpers pool goroutines and the
// caller, or returns false at once if another call owns the pool.
func (p *workerPool) tryRun(n, helpers int, fn func(int)) bool {
	if !p.busy.CompareAndSwap(false, true) {
		return false
	}
	defer p.busy.Store(false)
	p.grow(helpers)
	j := &job{fn: fn, n: int64(n), over: make(chan struct{})}
	j.helpers.Store(int32(helpers))
	p.current.Store(j)
	p.gen.Add(1)
	for range min(int(p.parked.Load()), helpers) {
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
	j.work()
	// A helper's last index is usually microseconds from done; when the
	// OS has taken its core instead, block rather than spin on ours.
	deadline := time.Now().Add(spinFor)
	for spins := 0; j.done.Load() < j.n; spins++ {
		if spins%256 == 255 && time.Now().After(deadline) {
			<-j.over
			break
		}
	}
	p.current.Store(nil)
	return true
}

// grow starts pool goroutines until there are at least k.
func (p *workerPool) grow(k int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for ; p.size < k && p.size < cap(p.wake); p.size++ {
		go p.loop()
	}
}

// loop is one pool goroutine: join each new job, then poll for the next
// for spinFor before parking until a call wakes it.
func (p *workerPool) loop() {
	var seen uint64
	for {
		deadline := time.Now().Add(spinFor)
		for spins := 0; p.gen.Load() == seen; spins++ {
			if spins%256 == 255 {
				if time.Now().After(deadline) {
					p.park(seen)
					deadline = time.Now().Add(spinFor)
				} else {
					runtime.Gosched()
				}
			}
		}
		seen = p.gen.Load()
		if j := p.current.Load(); j != nil && j.helpers.Add(-1) >= 0 {
			j.work()
		}
	}
}

// park blocks until a call wakes this goroutine, unless a job arrived
// after seen while it was getting ready to.
func (p *workerPool) park(seen uint64) {
	p.parked.Add(1)
	if p.gen.Load() == seen {
		<-p.wake
	}
	p.parked.Add(-1)
}

// ParallelRange runs fn over 0..n−1 in ranges [lo, hi) of chunk (the
// last shorter), shared out as ParallelFor shares its indices: one range
// runs on the caller.
func ParallelRange(n, chunk int, fn func(lo, hi int)) {
	ParallelFor((n+chunk-1)/chunk, func(c int) { fn(c*chunk, min((c+1)*chunk, n)) })
}

// AddShared is Add with a prefill's rows (64 Ki values and more) shared
// over the cores in chunks; the same bits, elementwise.
func AddShared(dst, src []float32) {
	const chunk = 16 << 10
	n := len(src)
	if n < 4*chunk {
		Add(dst, src)
		return
	}
	ParallelRange(n, chunk, func(lo, hi int) { Add(dst[lo:hi], src[lo:hi]) })
}
