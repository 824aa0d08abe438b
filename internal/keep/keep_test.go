package keep

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBufferReuse(t *testing.T) {
	tests := []struct {
		name      string
		put, get  int
		wantReuse bool
	}{
		{"same size", 64, 64, true},
		{"smaller request", 64, 16, true},
		{"larger request", 16, 64, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var k Buffer[float32]
			b := k.Get(tc.put)
			require.Len(t, *b, tc.put)
			k.Put(b)
			c := k.Get(tc.get)
			require.Len(t, *c, tc.get)
			assert.Equal(t, tc.wantReuse, &(*c)[:1][0] == &(*b)[:1][0])
		})
	}
}

// TestBufferKeepsLargest: of two buffers given back, the larger stays;
// a caller running beside another gets its own buffer.
func TestBufferKeepsLargest(t *testing.T) {
	var k Buffer[byte]
	small, large := k.Get(8), k.Get(32)
	assert.NotSame(t, small, large)
	k.Put(large)
	k.Put(small)
	assert.Same(t, large, k.Get(32))
	assert.Equal(t, 8, cap(*k.Get(8)), "nothing is kept while the large one is out")
}

// TestBufferLetsGoWhenIdle: a buffer nobody uses through a collection
// cycle is dropped; one used between collections is kept.
func TestBufferLetsGoWhenIdle(t *testing.T) {
	var k Buffer[byte]
	b := k.Get(1 << 20)
	k.Put(b)
	runtime.GC() // the cycle Put armed: b was used, it stays
	kept := false
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(time.Millisecond)
		k.mu.Lock()
		kept = k.b != nil
		k.mu.Unlock()
		if !kept {
			break
		}
	}
	assert.False(t, kept, "an unused buffer outlived every collection for 5 s")
	k.mu.Lock()
	assert.False(t, k.armed, "nothing kept, so no collection needs to call age")
	k.mu.Unlock()

	// Used between every collection: it stays.
	k.Put(b)
	for range 5 {
		runtime.GC()
		time.Sleep(time.Millisecond)
		c := k.Get(1 << 20)
		require.Same(t, b, c, "a buffer in use between collections was let go")
		k.Put(c)
	}
}

func TestBufferConcurrent(t *testing.T) {
	var k Buffer[int]
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				b := k.Get(16 + (g+i)%16)
				for j := range *b {
					(*b)[j] = g
				}
				for _, v := range *b {
					if v != g {
						t.Errorf("buffer shared between goroutines")
						return
					}
				}
				k.Put(b)
			}
		})
	}
	wg.Wait()
}
