package main

import (
	"os"
	"runtime"

	"github.com/llorch/llorch-check/internal/gctune"
)

// tuneGC keeps the garbage a process with a loaded model lets accumulate
// to a few megabytes over its live heap after each collection (gctune),
// unless the operator set GOGC; ok says it did. stop ends it.
func tuneGC() (pct int, ok bool, stop func()) {
	if os.Getenv("GOGC") != "" { // the operator's GOGC stands
		return 0, false, func() {}
	}
	runtime.GC()
	pct, stop = gctune.Tune()
	return pct, true, stop
}
