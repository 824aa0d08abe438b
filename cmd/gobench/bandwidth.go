package main

import (
	"fmt"
	"runtime"
	"sync"
	"time"
)

// readBandwidth measures how fast this machine reads memory that no cache
// holds: 1 GiB streamed by one goroutine, then by GOMAXPROCS of them (a
// share each), best of seven passes. A decode step streams its weights
// the same way, so its rate times the bytes it reads, over this, says how
// close to the limit it runs.
func readBandwidth() map[string]any {
	buf := make([]uint64, 1<<27)
	for i := range buf {
		buf[i] = uint64(i) // touch every page: a read of untouched memory reads the zero page
	}
	out := map[string]any{"read_bytes": 8 * len(buf)}
	for _, threads := range []int{1, runtime.GOMAXPROCS(0)} {
		best := 0.0
		for range 7 {
			t := time.Now()
			var wg sync.WaitGroup
			share := len(buf) / threads
			for w := range threads {
				wg.Go(func() { sink[w%len(sink)] = readAll(buf[w*share : (w+1)*share]) })
			}
			wg.Wait()
			best = max(best, float64(8*len(buf))/time.Since(t).Seconds()/1e9)
		}
		out[fmt.Sprintf("read_gbps_%d", threads)] = best
	}
	return out
}

// sink keeps the sums, so the reads cannot be optimised away.
var sink [64]uint64

// readAllGo folds buf into one word with eight independent chains, so the
// loads, not an addition's latency, set the pace.
func readAllGo(buf []uint64) uint64 {
	var a, b, c, d, e, f, g, h uint64
	for i := 0; i+8 <= len(buf); i += 8 {
		s := buf[i : i+8 : i+8]
		a ^= s[0]
		b ^= s[1]
		c ^= s[2]
		d ^= s[3]
		e ^= s[4]
		f ^= s[5]
		g ^= s[6]
		h ^= s[7]
	}
	return a ^ b ^ c ^ d ^ e ^ f ^ g ^ h
}
