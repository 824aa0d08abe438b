package kernels

import (
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestParallelFor checks that every index runs exactly once however the
// calls meet the pool: alone, after the pool has parked, nested inside
// another call, and from several goroutines at once.
func TestParallelFor(t *testing.T) {
	check := func(t *testing.T, n int) {
		t.Helper()
		counts := make([]atomic.Int32, n)
		ParallelFor(n, func(i int) { counts[i].Add(1) })
		for i := range counts {
			if c := counts[i].Load(); c != 1 {
				t.Fatalf("n=%d: index %d ran %d times", n, i, c)
			}
		}
	}
	t.Run("sizes", func(t *testing.T) {
		for _, n := range []int{0, 1, 2, 3, 17, 1000} {
			check(t, n)
		}
	})
	t.Run("after parking", func(t *testing.T) {
		check(t, 64)
		time.Sleep(5 * spinFor)
		check(t, 64)
	})
	t.Run("nested", func(t *testing.T) {
		var total atomic.Int64
		ParallelFor(8, func(i int) {
			ParallelFor(10, func(j int) { total.Add(int64(i*10 + j)) })
		})
		if got, want := total.Load(), int64(79*80/2); got != want {
			t.Fatalf("nested sum %d, want %d", got, want)
		}
	})
	t.Run("concurrent callers", func(t *testing.T) {
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 50 {
					check(t, 33)
				}
			}()
		}
		wg.Wait()
	})
}

// TestParallelForWaitsForEveryIndex checks that ParallelFor returns only
// once the slowest index has finished, not when the last one is taken.
func TestParallelForWaitsForEveryIndex(t *testing.T) {
	for range 20 {
		var finished atomic.Int32
		ParallelFor(4, func(i int) {
			if i == 3 {
				time.Sleep(2 * time.Millisecond)
			}
			finished.Add(1)
		})
		if f := finished.Load(); f != 4 {
			t.Fatalf("returned with %d of 4 indices finished", f)
		}
	}
}

// TestAddShared: the shared add is Add's, value for value, below, at and
// above the size it starts sharing at, with a ragged last chunk.
func TestAddShared(t *testing.T) {
	r := rand.New(rand.NewPCG(45, 46))
	for _, n := range []int{0, 1, 17, 64<<10 - 1, 64 << 10, 200_003} {
		dst, src := randSlice(r, n+5), randSlice(r, n)
		want := slices.Clone(dst)
		Add(want, src)
		AddShared(dst, src)
		require.Equal(t, want, dst, "n=%d", n)
	}
}
