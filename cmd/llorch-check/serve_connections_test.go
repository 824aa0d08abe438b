package main

import (
	"bytes"
	"log/slog"
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
		{4096, 4096 - connectionReserve},
		{1024, 1024 - connectionReserve},
		{2 * connectionReserve, connectionReserve},
		{100, 50},
		{1, 1},
		{1 << 20, maxDefaultConnections},
		{1<<63 - 1, maxDefaultConnections},
		{0, unknownFileLimit - connectionReserve},
	}
	for _, c := range cases {
		require.Equal(t, c.want, defaultMaxConnections(c.nofile), "RLIMIT_NOFILE %d", c.nofile)
	}
}

// TestConnectionCap: --max-connections as given, or its default from
// this process's limit; a negative one is refused.
func TestConnectionCap(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	require.Equal(t, defaultMaxConnections(openFileLimit()), serveFlags{}.connectionCap(log))
	require.Equal(t, 10, serveFlags{maxConnections: 10}.connectionCap(log))
	require.Empty(t, buf.String())
	require.ErrorContains(t, serveFlags{maxConnections: -1, parallel: 1, maxBatch: 1, maxBody: 1}.check(), "--max-connections -1")
}

// TestCapWarning: a cap is warned about when it leaves the process fewer
// than connectionReserve descriptors of its own.
func TestCapWarning(t *testing.T) {
	cases := []struct {
		n      int
		nofile uint64
		warn   bool
	}{
		{100, 4096, false},
		{4096 - connectionReserve, 4096, false},
		{4096 - connectionReserve + 1, 4096, true},
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
