//go:build !amd64 || purego

package kernels

// The pure-Go build (non-amd64, or -tags purego): the reference bodies
// (reference.go) only. The ...Kernel functions, which on amd64 do the part
// their assembly takes, do nothing and say so; their callers do it all.

func kernelName() string { return "generic" }

func axpyPanel(y []float32, ldy int, x []float32, ldx int, w []float32, ldw int, n, m, k int) {
	axpyPanelGeneric(y, ldy, x, ldx, w, ldw, n, m, k)
}

func dotPanel(h []float32, ldh, m int, w []float32, ldw, n int, out []float32, ldo int) {
	dotPanelGeneric(h, ldh, m, w, ldw, n, out, ldo)
}

func dotPanels(h []float32, ldh, m int, w []float32, ldw, n int, out []float32, ldo, groups int) {
	for g := range groups {
		dotPanelGeneric(h, ldh, m, w[4*g*ldw:], ldw, n, out[4*g:], ldo)
	}
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

// prefetchBytes: pure Go has no prefetch; nothing.
func prefetchBytes(p *byte, n int) {}

// AddScaled: dst[i] += float32(src[i]·s) for i < len(src), unfused.
func AddScaled(dst, src []float32, s float32) { addScaledGeneric(dst, src, s) }

func widenBlockTo(dst []float32, ldd int, src []uint16, lds, rows, n int) {
	for r := range rows {
		widenBlockGeneric(dst[r*ldd:], src[r*lds:], lds, 1, n)
	}
}

func widenBF16BlockTo(dst []float32, ldd int, src []uint16, lds, rows, n int) {
	for r := range rows {
		widenBF16Generic(dst[r*ldd:], src[r*lds:], lds, 1, n)
	}
}

func axpyPanel16Kernel(h half, y []float32, ldy int, x []float32, ldx int, w []uint16, ldw int, n, m, k int) (n16, k4 int) {
	return 0, 0
}

func dotPanel16Kernel(f half, h []float32, ldh, m int, w []uint16, ldw, n int, out []float32, ldo int) (n16 int, ok bool) {
	return 0, false
}

func axpySlabKernel(y []float32, ldy int, x []float32, ldx int, w []float32, m, k int) bool {
	return false
}

func axpySlab16Kernel(h half, y []float32, ldy int, x []float32, ldx int, w []uint16, m, k int) bool {
	return false
}

func scaleRows(dst []float32, d []uint16, a []int8, n int) { scaleRowsGeneric(dst, d, a, n) }

func gelu(x []float32) { geluGeneric(x) }

func expShifted(dst []float64, src []float32, sub float32) { expShiftedGeneric(dst, src, sub) }

func limbSlab(w *quant, y []float32, rec []byte, s, o []float32, j0 int) {
	w.limbSlabGeneric(y, rec, s, o, j0)
}

func limbSlabStored(w *quant, y []float32, rec []byte, j0 int) bool { return false }

func limbSlab2(w *quant, y0, y1 []float32, rec0, rec1 []byte, s, o []float32, j0 int) {
	w.limbSlabGeneric(y0, rec0, s, o, j0)
	w.limbSlabGeneric(y1, rec1, s, o, j0)
}

func splitLimbsKernel(rec []byte, x []float32, min int8, size int) int { return 0 }

func scaleMaxKernel(x []float32, scale float32, mul bool, lo float32) (int, float32, bool) {
	return 0, lo, false
}

func narrowScaledKernel(dst []float32, src []float64, m float64) int { return 0 }

func narrowFloat16Kernel(dst []uint16, src []float32) int { return 0 }

// No unpacked slabs in the pure-Go build: limbCols never unpacks.
func (w *quant) unpackedBytes(M int) int { return 0 }

func (w *quant) unpackSlab(ints []byte, j0 int) {}

func limbSlabUnpacked(w *quant, y []float32, ints, rec []byte, s, o []float32, j0 int) {
	w.limbSlabGeneric(y, rec, s, o, j0)
}

// limbRowsAMX: no tiles in the pure-Go build.
func (w *quant) limbRowsAMX(dst []float32, rec []byte, M, N int, s []float32, c0 int) int { return 0 }
