//go:build !linux

package weights

import "os"

// Release is a no-op off Linux: the mapping stays resident until the
// loader unmaps it.
func Release(b []byte) {}

func adviseMapping([]byte) {}

// Prefetch is a no-op off Linux.
func Prefetch(b []byte) {}

// PopulateRead is a no-op off Linux: pages fault in as they are read.
func PopulateRead([]byte) {}

// dropCache is a no-op off Linux.
func dropCache(*os.File, int64, int64) {}
