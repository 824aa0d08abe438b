package gctune

import (
	"runtime"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPercent(t *testing.T) {
	for _, tc := range []struct {
		weights int64
		want    int
	}{
		{0, 100},
		{6 << 20, 100}, // a tiny model: the default
		{8 << 20, 100}, // headroom equal to the weights
		{135 << 20, 5}, // GPT-2 124M Q8_0: 8 MB of garbage, not 135
		{654 << 20, 1}, // GPT-2 F32
		{4 << 30, 1},   // larger models: 1% is the floor
		{64 << 30, 1},
	} {
		require.Equal(t, tc.want, Percent(tc.weights), "weights %d", tc.weights)
	}
}

// TestTune: after a collection GOGC is Percent of the live heap, and
// follows it as it grows; stop leaves it where it was.
func TestTune(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	live := func() int64 {
		s := []rtmetrics.Sample{{Name: "/gc/heap/live:bytes"}}
		rtmetrics.Read(s)
		return int64(s[0].Value.Uint64())
	}
	gogc := func() int { p := debug.SetGCPercent(100); debug.SetGCPercent(p); return p }
	first, stop := Tune()
	defer stop()
	require.Equal(t, first, gogc())
	var held [][]byte
	var seen []int
	for _, mb := range []int{0, 64, 256} {
		held = append(held, make([]byte, mb<<20))
		require.Eventually(t, func() bool {
			runtime.GC()
			return gogc() == Percent(live())
		}, 10*time.Second, time.Millisecond, "%d MB more live: GOGC %d, live %d", mb, gogc(), live())
		seen = append(seen, gogc())
	}
	require.Equal(t, 100, seen[0], "a small heap: the ceiling")
	require.Less(t, seen[2], seen[1], "GOGC follows the live heap down as it grows: %v", seen)
	require.Less(t, seen[1], seen[0], "%v", seen)
	stop()
	debug.SetGCPercent(42)
	held = nil
	runtime.GC()
	runtime.GC()
	time.Sleep(10 * time.Millisecond)
	require.Equal(t, 42, gogc(), "stopped: GOGC stays where it is set")
	runtime.KeepAlive(held)
}

// TestTuneReturnsFreePages: garbage freed beside a large live heap goes
// back to the system, not kept for reuse up to the runtime's own margin
// (10% of the heap goal: tens of megabytes over a model's weights).
func TestTuneReturnsFreePages(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	free := func() int64 {
		s := []rtmetrics.Sample{{Name: "/memory/classes/heap/free:bytes"}}
		rtmetrics.Read(s)
		return int64(s[0].Value.Uint64())
	}
	_, stop := Tune()
	defer stop()
	live := make([]byte, 400<<20)
	for i := range live {
		live[i] = 1 // resident, as weights are
	}
	var garbage [][]byte
	for range 64 {
		b := make([]byte, 1<<20)
		b[0], b[len(b)-1] = 1, 1
		garbage = append(garbage, b)
	}
	garbage = nil
	runtime.GC()
	runtime.GC()
	require.Eventually(t, func() bool {
		runtime.KeepAlive(make([]byte, 1<<10)) // the allocator scavenges under a limit
		return free() <= limitSlack
	}, 10*time.Second, 10*time.Millisecond, "%d MB of free pages kept beside %d MB live", free()>>20, len(live)>>20)
	runtime.KeepAlive(live)
	runtime.KeepAlive(garbage)
}
