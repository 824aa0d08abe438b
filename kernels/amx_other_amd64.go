//go:build amd64 && !purego && !linux

package kernels

// requestTileData: the tile kernels are asked for on Linux only, where
// the grant is known; elsewhere the VNNI kernels run.
func requestTileData() bool { return false }
