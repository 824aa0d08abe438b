//go:build !amd64 || purego

package kernels

// The pure-Go build (non-amd64, or -tags purego): the generic kernels only.

func kernelName() string { return "generic" }

func axpyPanel(y []float32, ldy int, x []float32, ldx int, w []float32, ldw int, n, m, k int) {
	axpyPanelGeneric(y, ldy, x, ldx, w, ldw, n, m, k)
}

func dotPanel(h []float32, ldh, m int, w []float32, ldw, n int, out []float32, ldo int) {
	dotPanelGeneric(h, ldh, m, w, ldw, n, out, ldo)
}

// hasTileKernel: no register-blocked kernel in pure Go; matmulCols uses the
// panel path for every M.
const hasTileKernel = false

func tileWidth() int { return 24 }

func gemmTiles(c []float32, ldc int, a []float32, lda int, b []float32, ldb int, m4, n24, k int) {
	panic("gemmTiles: no tile kernel in this build")
}

// Add: dst[i] += src[i] for i < len(src).
func Add(dst, src []float32) { addGeneric(dst, src) }

func widenBlock(dst []float32, src []uint16, lds, rows, n int) {
	widenBlockGeneric(dst, src, lds, rows, n)
}

func axpyPanel16(y []float32, ldy int, x []float32, ldx int, w []uint16, ldw int, n, m, k int) {
	axpyPanelWidened(y, ldy, x, ldx, w, ldw, n, m, k)
}

func dotPanel16(h []float32, ldh, m int, w []uint16, ldw, n int, out []float32, ldo int) {
	dotPanelWidened(h, ldh, m, w, ldw, n, out, ldo)
}

func (b *block) axpyPiece(y []float32, ldy int, x []float32, ldx int, r0, c, n, m, k int) {
	b.axpyPieceWidened(y, ldy, x, ldx, r0, c, n, m, k)
}

func (b *block) dequantPiece(dst []float32, ldd, r0, c, rows, n int) {
	b.dequantGeneric(dst, ldd, r0, c, rows, n)
}

func scaleRows(dst []float32, d []uint16, a []int8, n int) { scaleRowsGeneric(dst, d, a, n) }

// nibbleKernels: no kernel here reads nibbles; blocks unpack them.
const nibbleKernels = false

func unpackRows(dst []int8, lo, hi []byte, hbits int, min int8, k int) {
	unpackRowsGeneric(dst, lo, hi, hbits, min, k)
}

func (s *slabs) axpySlab(y []float32, ldy int, x []float32, ldx int, at, m, k int) {
	s.axpySlabGeneric(y, ldy, x, ldx, at, m, k)
}

func gelu(x []float32) { geluGeneric(x) }

func expShifted(dst []float64, src []float32, sub float32) { expShiftedGeneric(dst, src, sub) }

func (b *block) axpySlab(y []float32, ldy int, x []float32, ldx int, m, k int) bool {
	return false
}
