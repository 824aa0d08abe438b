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

func TestMeminfoField(t *testing.T) {
	for _, c := range []struct {
		name, meminfo, key string
		want               int64
	}{
		{"linux", "MemTotal:       16303472 kB\nMemFree:         8151736 kB\n", "MemTotal", 16303472 * 1024},
		{"not first", "MemFree: 1 kB\nMemTotal: 2 kB\n", "MemTotal", 2048},
		{"available", "MemTotal: 4 kB\nMemFree: 1 kB\nMemAvailable: 3 kB\n", "MemAvailable", 3072},
		{"a prefix of another key", "MemTotalX: 5 kB\nMemTotal: 2 kB\n", "MemTotal", 2048},
		{"absent", "MemFree: 1 kB\n", "MemTotal", 0},
		{"unparsable", "MemTotal: lots kB\n", "MemTotal", 0},
		{"empty", "", "MemTotal", 0},
	} {
		require.Equal(t, c.want, meminfoField(c.meminfo, c.key), c.name)
	}
	if runtime.GOOS == "linux" {
		require.Greater(t, MemTotal(), int64(64<<20), "this machine's")
		require.Greater(t, MemAvailable(), int64(0), "this machine's")
		require.LessOrEqual(t, MemAvailable(), MemTotal())
	}
}
