package weights

import (
	"fmt"
	"os"

	"github.com/llorch/llorch-check/internal/regularfile"
)

// Evictor drops the pages of files mapped whole (Map) from the page cache
// once a loader has read them, for a file read once whose pages the
// machine needs for the model being built from it. A 16 GB checkpoint read
// into a 16 GB model on a 24 GB machine otherwise leaves the kernel to
// reclaim the file's pages under the allocation's pressure: 20-42 s of
// system time in an 8B load's 40-65 s (bench notes 31). Dropping each
// tensor's pages as soon as it is placed frees them where they were read,
// at no cost to anyone; for a file that fits beside its model the page
// cache is worth keeping instead (a second load reads memory), which is
// the caller's choice.
type Evictor struct {
	files []evictFile
}

type evictFile struct {
	data []byte   // the file's mapping
	f    *os.File // any descriptor of the file (opened as Map opens it): the page cache is the file's
}

// NewEvictor is an Evictor for the mappings data[i] of files paths[i].
func NewEvictor(paths []string, data [][]byte) (*Evictor, error) {
	if len(paths) != len(data) {
		return nil, fmt.Errorf("evictor: %d paths for %d mappings", len(paths), len(data))
	}
	e := &Evictor{}
	for i, p := range paths {
		f, err := regularfile.Open(p)
		if err != nil {
			e.Close()
			return nil, fmt.Errorf("opening %s to drop its read pages: %w", p, err)
		}
		e.files = append(e.files, evictFile{data[i], f})
	}
	return e, nil
}

// Evict releases b, a part of one of the mappings, from the resident set
// (Release) and drops its whole pages from the page cache. A b in none of
// the mappings is only released. Errors only cost memory and are ignored.
func (e *Evictor) Evict(b []byte) {
	Release(b)
	if len(b) == 0 {
		return
	}
	p := uintptrOf(b)
	for _, f := range e.files {
		if len(f.data) == 0 {
			continue
		}
		base := uintptrOf(f.data)
		if p >= base && p+uintptr(len(b)) <= base+uintptr(len(f.data)) {
			dropCache(f.f, int64(p-base), int64(len(b)))
			return
		}
	}
}

// Close closes the descriptors; the first error is returned.
func (e *Evictor) Close() error {
	var first error
	for _, f := range e.files {
		if err := f.f.Close(); err != nil && first == nil {
			first = err
		}
	}
	e.files = nil
	return first
}
