package loader

import (
	"github.com/llorch/llorch-check/internal/procstat"
	"github.com/llorch/llorch-check/weights"
)

// releaseFor is how a load lets go of a tensor's file pages once it is
// placed. They always leave the process's resident set (weights.Release).
// They leave the page cache too (weights.Evictor) when the file and a
// model of at least its size do not both fit in the memory the kernel
// says is available: an 8B checkpoint on a 24 GB machine, where the
// kernel would otherwise reclaim the file's pages under the allocation's
// pressure at a cost of tens of seconds of system time (bench notes 36).
// A file that fits stays cached, and loads from memory the next time.
// done closes what the Evictor opened.
func releaseFor(paths []string, data [][]byte) (release func([]byte), done func()) {
	var size int64
	for _, d := range data {
		size += int64(len(d))
	}
	if !dropBehind(size, procstat.MemAvailable()) {
		return weights.Release, func() {}
	}
	ev, err := weights.NewEvictor(paths, data)
	if err != nil {
		// Dropping the pages only saves time; the load goes on without.
		return weights.Release, func() {}
	}
	return ev.Evict, func() { ev.Close() }
}

// dropBehind says whether a load of fileBytes should drop the file's
// pages from the page cache as it goes, given available bytes of memory
// (0: unknown, keep them). Every way a model is held takes at least the
// file's size (quantised and 16-bit matrices as stored, others widened).
func dropBehind(fileBytes, available int64) bool {
	return available > 0 && 2*fileBytes > available
}
