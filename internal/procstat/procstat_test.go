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
