//go:build amd64 && !purego && linux

package kernels

import "syscall"

// requestTileData asks Linux for AMX's tile data (ARCH_REQ_XCOMP_PERM for
// XFEATURE_XTILEDATA): since 5.16 a process must, or its first tile
// instruction faults. The grant is the process's, every thread's.
func requestTileData() bool {
	const archReqXcompPerm, xfeatureXtiledata = 0x1023, 18
	_, _, errno := syscall.RawSyscall(syscall.SYS_ARCH_PRCTL, archReqXcompPerm, xfeatureXtiledata, 0)
	return errno == 0
}
