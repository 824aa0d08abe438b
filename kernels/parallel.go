package kernels

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// ParallelMinWork is the multiply-add count below which goroutines cost
// more than they save.
const ParallelMinWork = 1 << 16

// ParallelFor runs fn(0..n-1) on up to GOMAXPROCS goroutines, the caller
// being one of them, each taking the next index as it becomes free.
func ParallelFor(n int, fn func(i int)) {
	workers := min(n, runtime.GOMAXPROCS(0))
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
