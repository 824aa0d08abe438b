package procstat

import (
	"os"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	buf := make([]byte, 64<<20)
	for i := range buf {
		buf[i] = 1 // touched, so resident
	}
	rss, peak := Memory(os.Getpid())
	require.Greater(t, rss, int64(64<<20))
	require.GreaterOrEqual(t, peak, rss)
	require.GreaterOrEqual(t, PeakRSS(), peak, "the peak only grows")
	runtime.KeepAlive(buf)
	rss, peak = Memory(1 << 30)
	require.Zero(t, rss+peak, "no such process")
}

func TestMemTotal(t *testing.T) {
	for _, c := range []struct {
		name, meminfo string
		want          int64
	}{
		{"linux", "MemTotal:       16303472 kB\nMemFree:         8151736 kB\n", 16303472 * 1024},
		{"not first", "MemFree: 1 kB\nMemTotal: 2 kB\n", 2048},
		{"absent", "MemFree: 1 kB\n", 0},
		{"unparsable", "MemTotal: lots kB\n", 0},
		{"empty", "", 0},
	} {
		require.Equal(t, c.want, memTotal(c.meminfo), c.name)
	}
	if runtime.GOOS == "linux" {
		require.Greater(t, MemTotal(), int64(64<<20), "this machine's")
	}
}
