package server

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDefaultMaxConnections: the open-file limit less what the process
// needs for itself, half of a small limit, bounded above, and a stand-in
// where the limit is unknown.
func TestDefaultMaxConnections(t *testing.T) {
	cases := []struct {
		nofile uint64
		want   int
	}{
		{4096, 4096 - ConnectionReserve},
		{1024, 1024 - ConnectionReserve},
		{2 * ConnectionReserve, ConnectionReserve},
		{100, 50},
		{1, 1},
		{1 << 20, MaxDefaultConnections},
		{1<<63 - 1, MaxDefaultConnections},
		{0, unknownFileLimit - ConnectionReserve},
	}
	for _, c := range cases {
		require.Equal(t, c.want, defaultMaxConnections(c.nofile), "RLIMIT_NOFILE %d", c.nofile)
	}
}

// TestConnectionCap: a requested cap as given, or for 0 the default from
// this process's limit; a cap within the limit draws no warning.
func TestConnectionCap(t *testing.T) {
	limit, warning := ConnectionCap(0)
	require.Equal(t, defaultMaxConnections(openFileLimit()), limit)
	require.Empty(t, warning)
	limit, warning = ConnectionCap(10)
	require.Equal(t, 10, limit)
	require.Empty(t, warning)
}

// TestCapWarning: a cap is warned about when it leaves the process fewer
// than ConnectionReserve descriptors of its own.
func TestCapWarning(t *testing.T) {
	cases := []struct {
		n      int
		nofile uint64
		warn   bool
	}{
		{100, 4096, false},
		{4096 - ConnectionReserve, 4096, false},
		{4096 - ConnectionReserve + 1, 4096, true},
		{4096, 4096, true},
		{10000, 4096, true},
		{10000, 0, false}, // unknown limit
	}
	for _, c := range cases {
		w := capWarning(c.n, c.nofile)
		require.Equal(t, c.warn, w != "", "--max-connections %d under %d: %q", c.n, c.nofile, w)
		if c.warn {
			require.Contains(t, w, "too many open files")
		}
	}
}
