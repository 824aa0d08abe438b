//go:build linux

package weights

import (
	"os"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestEvictDropsPageCache: Release leaves a read tensor's pages in the
// page cache (a second load of a small model reads them from memory);
// Evict drops them, so that a model as large as the machine's free memory
// is not built while the kernel reclaims its file's pages under pressure.
func TestEvictDropsPageCache(t *testing.T) {
	for _, tc := range []struct {
		name       string
		evict      bool
		wantCached bool
	}{
		{"Release", false, true},
		{"Evict", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			paths := []string{cachedFile(t, 8<<20), cachedFile(t, 4<<20)}
			var data [][]byte
			for _, p := range paths {
				b, unmap, err := Map(p)
				require.NoError(t, err)
				t.Cleanup(func() { unmap() })
				data = append(data, b)
			}
			ev, err := NewEvictor(paths, data)
			require.NoError(t, err)
			defer ev.Close()
			drop := Release
			if tc.evict {
				drop = ev.Evict
			}
			for i, b := range data {
				var sum byte
				for j := 0; j < len(b); j += 4096 {
					sum += b[j]
				}
				require.Greater(t, cachedFraction(t, paths[i]), 0.9, "the file's pages, just read, are cached")
				// A tensor's bytes: the second half of the file, from
				// inside a page, so only its whole pages may go.
				half := len(b) / 2
				drop(b[half-100:])
				got := cachedFraction(t, paths[i])
				if tc.wantCached {
					require.Greater(t, got, 0.9, "Release keeps the page cache")
				} else {
					require.InDelta(t, 0.5, got, 0.01, "Evict drops the tensor's whole pages, only them")
				}
			}
		})
	}
}

// cachedFile writes n bytes to a new file on a disk-backed filesystem
// (the package directory: on tmpfs the page cache is the file itself and
// cannot be dropped), flushed so its pages are clean.
func cachedFile(t *testing.T, n int) string {
	f, err := os.CreateTemp(".", "evict-test-*")
	require.NoError(t, err)
	t.Cleanup(func() { os.Remove(f.Name()) })
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i * 7)
	}
	_, err = f.Write(b)
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
	return f.Name()
}

// cachedFraction is the share of path's pages in the page cache, by
// mincore of a fresh mapping (which reports the cache, not this
// mapping's page tables).
func cachedFraction(t *testing.T, path string) float64 {
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	st, err := f.Stat()
	require.NoError(t, err)
	b, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	require.NoError(t, err)
	defer unix.Munmap(b)
	page := os.Getpagesize()
	vec := make([]byte, (len(b)+page-1)/page)
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0])))
	require.Zero(t, errno, "mincore")
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return float64(n) / float64(len(vec))
}
