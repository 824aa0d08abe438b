package loader

import (
	"bytes"
	"hash/crc32"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCacheDigestChunks: the digest sums data in chunks of digestChunk
// bytes however the data is cut into pieces, each chunk's sum the
// CRC-32C of its bytes; any byte changed, or two chunks swapped, changes
// the digest.
func TestCacheDigestChunks(t *testing.T) {
	old := digestChunk
	digestChunk = 7
	t.Cleanup(func() { digestChunk = old })
	data := make([]byte, 50)
	for i := range data {
		data[i] = byte(i*37 + 1)
	}
	h := cacheHeader{Key: cacheKey{Version: cacheVersion}}
	whole, err := cacheDigest(h, [][]byte{data})
	require.NoError(t, err)

	sums := chunkSums([][]byte{data})
	require.Len(t, sums, 8) // 7 chunks of 7 and one of 1
	for i, s := range sums {
		require.Equal(t, crc32.Checksum(data[7*i:min(7*i+7, len(data))], castagnoli), s, "chunk %d", i)
	}
	for _, cuts := range [][]int{{0}, {3}, {7}, {6, 8}, {1, 2, 3, 20, 20, 49}} {
		var pieces [][]byte
		at := 0
		for _, c := range cuts {
			pieces, at = append(pieces, data[at:c]), c
		}
		pieces = append(pieces, data[at:])
		got, err := cacheDigest(h, pieces)
		require.NoError(t, err)
		require.Equal(t, whole, got, "cut at %v", cuts)
	}

	for i := range data {
		b := append([]byte(nil), data...)
		b[i] ^= 0x40
		got, err := cacheDigest(h, [][]byte{b})
		require.NoError(t, err)
		require.NotEqual(t, whole, got, "byte %d changed", i)
	}
	swapped := append(append(append([]byte(nil), data[7:14]...), data[:7]...), data[14:]...)
	got, err := cacheDigest(h, [][]byte{swapped})
	require.NoError(t, err)
	require.NotEqual(t, whole, got, "two chunks swapped")
}

// TestFileChunkSums: a load checks the cache by reading the file, and
// the sums it reads are chunkSums' of the same bytes wherever the data
// starts and however the chunks fall against the read pieces; a file cut
// short is an error naming where, not a digest of what was there.
func TestFileChunkSums(t *testing.T) {
	old := digestChunk
	t.Cleanup(func() { digestChunk = old })
	file := make([]byte, 3<<20+123)
	for i := range file {
		file[i] = byte(i*131 + i>>9)
	}
	for _, c := range []struct {
		chunk        int
		start, n     int64
		wantShortErr bool
	}{
		{7, 0, 50, false},
		{7, 13, 49, false},
		{1 << 20, 4096, 3<<20 - 4000, false}, // chunks of whole read pieces
		{3<<20 + 5, 0, 3<<20 + 123, false},   // one chunk, read in four pieces
		{1<<20 + 1, 100, 3<<20 + 23, false},  // chunks astride the pieces
		{1 << 20, 4096, 3 << 20, true},       // the file ends before the data does
	} {
		digestChunk = c.chunk
		sums, err := fileChunkSums(bytes.NewReader(file), c.start, c.n)
		if c.wantShortErr {
			require.ErrorContains(t, err, "reading at", "%+v", c)
			continue
		}
		require.NoError(t, err, "%+v", c)
		require.Equal(t, chunkSums([][]byte{file[c.start : c.start+c.n]}), sums, "%+v", c)
	}
}
