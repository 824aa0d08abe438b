package kernels

// The summation blocking the float weight layouts' products share
// (matmulCols, and the slabbed matrices' panel path): chains of kSum
// products summed from zero, then added to the output. (Quantised
// products sum group by group instead: limbs.go.)

// kSum is the depth of one summation chain of matmulCols, the tile
// kernel's block: deep enough that the extra pass over dst costs nothing
// next to the block's FMAs.
const kSum = kTile

// kTile is the depth of one tile-kernel call: a 24-column strip of the
// weights is 24 KiB, within L1 (a 48-column one 48 KiB, L1 on Zen 5).
const kTile = 256

// addRows adds rows [rows,n] of a (stride n) into dst (stride ldd).
func addRows(dst []float32, ldd int, a []float32, n, rows int) {
	for i := range rows {
		Add(dst[i*ldd:i*ldd+n], a[i*n:(i+1)*n])
	}
}
