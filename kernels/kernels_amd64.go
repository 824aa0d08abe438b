//go:build amd64 && !purego

package kernels

import (
	"os"
	"unsafe"

	"golang.org/x/sys/cpu"
)

// Dispatch: each kernel the rest of the package calls runs this CPU's
// assembly (one .s file a family, named below) on what the assembly takes
// and the reference bodies (reference.go) on the rest. This file calls
// nothing of the package but those bodies and the scratch pool
// (scratch.go). A kernel named ...Kernel does only the part its assembly
// takes and says how much (none on a CPU without it); its caller finishes
// the rest, as the pure-Go build's does all of it.

// The AVX2+FMA kernels, used when the CPU has both and LLORCH_KERNELS is
// not "generic" (which forces the pure-Go kernels, to compare them on one
// machine).
var useAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA && kernelsEnv != "generic"

// useF16C says whether float16 weights are widened by VCVTPH2PS.
var useF16C = useAVX2 && cpu.X86.HasF16C

// useAVX512 selects the 512-bit tile kernel for prefill (LLORCH_KERNELS=avx2
// or avxvnni keeps the 256-bit one, to compare: avxvnni runs what a CPU with
// AVX-VNNI and no AVX-512 runs, avx2 what one without either runs).
var useAVX512 = useAVX2 && cpu.X86.HasAVX512F && kernelsEnv != "avx2" && kernelsEnv != "avxvnni"

// kernelsEnv is LLORCH_KERNELS, which narrows the kernels to compare
// them on one machine: generic, avx2, avxvnni, or avx512 (no AMX tiles).
var kernelsEnv = os.Getenv("LLORCH_KERNELS")

// useAVX512BW: the byte-lane kernels that unpack 5- and 6-bit integers.
var useAVX512BW = useAVX512 && cpu.X86.HasAVX512BW

func kernelName() string {
	if useAMX {
		return "avx2+fma, avx512 tiles, amx int8"
	}
	if useAVX512 {
		return "avx2+fma, avx512 tiles"
	}
	if useAVXVNNI {
		return "avx2+fma, avx-vnni"
	}
	if useAVX2 {
		return "avx2+fma"
	}
	return "generic"
}

// Panels (panels_amd64.s), float32, float16 and bfloat16 weights.

//go:noescape
func axpyPanelAVX2(y *float32, ldyb int, x *float32, ldxb int, w *float32, ldwb int, n, m, k int)

//go:noescape
func axpyPanelF16AVX2(y *float32, ldyb int, x *float32, ldxb int, w *uint16, ldwb int, n, m, k int)

//go:noescape
func axpyPanelBF16AVX2(y *float32, ldyb int, x *float32, ldxb int, w *uint16, ldwb int, n, m, k int)

//go:noescape
func dotPanelAVX2(h *float32, ldhb int, m int, w *float32, ldwb int, n int, out *float32, ldob int)

//go:noescape
func dotPanelF16AVX2(h *float32, ldhb int, m int, w *uint16, ldwb int, n int, out *float32, ldob int)

//go:noescape
func dotPanelBF16AVX2(h *float32, ldhb int, m int, w *uint16, ldwb int, n int, out *float32, ldob int)

//go:noescape
func addVecAVX2(dst, src *float32, n int)

//go:noescape
func prefetchBytes(p *byte, n int)

//go:noescape
func addScaledVecAVX2(dst, src *float32, s float32, n int)

// AddScaled: dst[i] += float32(src[i]·s) for i < len(src), the product
// rounded before the sum (no FMA), as PyTorch adds a weighted tensor.
func AddScaled(dst, src []float32, s float32) {
	n, n16 := len(src), 0
	if useAVX2 {
		n16 = n &^ 15
	}
	if n16 > 0 {
		_ = dst[n-1]
		addScaledVecAVX2(unsafe.SliceData(dst), unsafe.SliceData(src), s, n16)
	}
	addScaledGeneric(dst[n16:n], src[n16:], s)
}

// Add: dst[i] += src[i] for i < len(src).
func Add(dst, src []float32) {
	n, n16 := len(src), 0
	if useAVX2 {
		n16 = n &^ 15
	}
	if n16 > 0 {
		_ = dst[n-1]
		addVecAVX2(unsafe.SliceData(dst), unsafe.SliceData(src), n16)
	}
	addGeneric(dst[n16:n], src[n16:])
}

// axpyPanelBulk runs kern, the panel kernel for w's type, on the part of
// axpyPanel's product it takes, n&^15 columns by k&^3 rows, and returns
// that part's size.
func axpyPanelBulk[W weight](kern func(y *float32, ldyb int, x *float32, ldxb int, w *W, ldwb int, n, m, k int), y []float32, ldy int, x []float32, ldx int, w []W, ldw int, n, m, k int) (n16, k4 int) {
	n16, k4 = n&^15, k&^3
	if n16 > 0 && k4 > 0 {
		// The last elements touched, so that a bad stride panics here
		// instead of corrupting memory in the assembly.
		_ = y[(m-1)*ldy+n16-1]
		_ = x[(m-1)*ldx+k4-1]
		_ = w[(k4-1)*ldw+n16-1]
		kern(unsafe.SliceData(y), ldy*4, unsafe.SliceData(x), ldx*4, unsafe.SliceData(w), ldw*int(unsafe.Sizeof(w[0])), n16, m, k4)
	}
	return n16, k4
}

// axpyPanel: y[i,0:n] += Σ_k x[i,k]·w[k,0:n] for i < m (strides in
// elements). The assembly takes the part with k a multiple of 4, the last
// n%16 columns through 16-wide scratch (axpyEdge), so that every column
// is summed with fused multiply-adds however the columns are split: the
// tile kernel's right edge and the panel path then give a column the same
// bits, and a row the same bits in a decode step, a prefill or a prefix
// reused (an unfused 8-column edge once made 64×128 products differ). The
// last k%4 rows are fused the same way, through axpyRows.
func axpyPanel(y []float32, ldy int, x []float32, ldx int, w []float32, ldw int, n, m, k int) {
	if !useAVX2 || m == 0 {
		axpyPanelGeneric(y, ldy, x, ldx, w, ldw, n, m, k)
		return
	}
	n16, k4 := axpyPanelBulk(axpyPanelAVX2, y, ldy, x, ldx, w, ldw, n, m, k)
	if n16 < n && k4 > 0 {
		axpyEdge(y[n16:], ldy, x, ldx, w[n16:], ldw, n-n16, m, k4)
	}
	if k4 < k {
		axpyRows(y, ldy, x[k4:], ldx, w[k4*ldw:], ldw, n, m, k-k4)
	}
}

// axpyPanel16Kernel is the part of axpyPanel16 (16-bit weights of format
// h, widened in the kernel: float16 by VCVTPH2PS, bfloat16 by a zero
// extension and a shift) that the assembly takes, as axpyPanelBulk; (0, 0)
// on a CPU without the instructions.
func axpyPanel16Kernel(h half, y []float32, ldy int, x []float32, ldx int, w []uint16, ldw int, n, m, k int) (n16, k4 int) {
	switch {
	case m == 0:
	case h == bfloat16 && useAVX2:
		return axpyPanelBulk(axpyPanelBF16AVX2, y, ldy, x, ldx, w, ldw, n, m, k)
	case h == binary16 && useF16C:
		return axpyPanelBulk(axpyPanelF16AVX2, y, ldy, x, ldx, w, ldw, n, m, k)
	}
	return 0, 0
}

// axpyRows is axpyPanel on k < 4 rows of w: x's and w's rows are copied
// into scratch four deep, the rest zero, so that they too are fused
// multiply-adds, as the tile kernel sums them.
func axpyRows(y []float32, ldy int, x []float32, ldx int, w []float32, ldw int, n, m, k int) {
	buf := getScratch(4 * (m + n))
	defer scratch.Put(buf)
	xb, wb := (*buf)[:4*m], (*buf)[4*m:4*(m+n)]
	clear(*buf)
	copyRows(xb, 4, x, ldx, m, k)
	copyRows(wb, n, w, ldw, k, n)
	axpyPanel(y, ldy, xb, 4, wb, n, n, m, 4)
}

// axpyEdge is axpyPanelAVX2 on n < 16 columns (k a multiple of 4): y's
// and w's columns are copied into 16-wide scratch, the rest zero, and y's
// copied back.
func axpyEdge(y []float32, ldy int, x []float32, ldx int, w []float32, ldw int, n, m, k int) {
	buf := getScratch(16 * (m + k))
	defer scratch.Put(buf)
	yb, wb := (*buf)[:16*m], (*buf)[16*m:16*(m+k)]
	clear(*buf)
	copyRows(yb, 16, y, ldy, m, n)
	copyRows(wb, 16, w, ldw, k, n)
	_ = x[(m-1)*ldx+k-1]
	axpyPanelAVX2(unsafe.SliceData(yb), 16*4, unsafe.SliceData(x), ldx*4, unsafe.SliceData(wb), 16*4, 16, m, k)
	copyRows(y, ldy, yb, 16, m, n)
}

// dotPanelBulk runs kern, the dot kernel for w's type, on dotPanel's
// first n&^15 columns and returns that count.
func dotPanelBulk[W weight](kern func(h *float32, ldhb int, m int, w *W, ldwb int, n int, out *float32, ldob int), h []float32, ldh, m int, w []W, ldw, n int, out []float32, ldo int) int {
	n16 := n &^ 15
	_ = h[(m-1)*ldh+n-1]
	_ = w[3*ldw+n-1]
	_ = out[(m-1)*ldo+3]
	kern(unsafe.SliceData(h), ldh*4, m, unsafe.SliceData(w), ldw*int(unsafe.Sizeof(w[0])), n16, unsafe.SliceData(out), ldo*4)
	return n16
}

// dotPanel: out[i*ldo+r] = h[i,0:n]·w[r,0:n] for r < 4, i < m.
func dotPanel(h []float32, ldh, m int, w []float32, ldw, n int, out []float32, ldo int) {
	if !useAVX2 || m == 0 {
		dotPanelGeneric(h, ldh, m, w, ldw, n, out, ldo)
		return
	}
	n16 := dotPanelBulk(dotPanelAVX2, h, ldh, m, w, ldw, n, out, ldo)
	if n16 < n {
		addDots(h[n16:], ldh, m, w[n16:], ldw, n-n16, out, ldo)
	}
}

//go:noescape
func dotPanelsAVX2(h *float32, ldhb int, m int, w *float32, ldwb int, n int, out *float32, ldob int, groups int)

// dotPanels is dotPanel on groups consecutive groups of 4 rows of w (rows
// 4g..4g+3 into out's columns 4g..4g+3), in one kernel call where n is a
// multiple of 16, with dotPanel's bits.
func dotPanels(h []float32, ldh, m int, w []float32, ldw, n int, out []float32, ldo, groups int) {
	if !useAVX2 || n%16 != 0 || n == 0 || m == 0 || groups == 0 {
		for g := range groups {
			dotPanel(h, ldh, m, w[4*g*ldw:], ldw, n, out[4*g:], ldo)
		}
		return
	}
	_ = h[(m-1)*ldh+n-1]
	_ = w[(4*groups-1)*ldw+n-1]
	_ = out[(m-1)*ldo+4*groups-1]
	dotPanelsAVX2(unsafe.SliceData(h), ldh*4, m, unsafe.SliceData(w), ldw*4, n, unsafe.SliceData(out), ldo*4, groups)
}

// dotPanel16Kernel is dotPanel16 (4 weight rows of 16-bit format f,
// widened in the kernel) on its first n16 columns; ok false, nothing
// done, on a CPU without the instructions.
func dotPanel16Kernel(f half, h []float32, ldh, m int, w []uint16, ldw, n int, out []float32, ldo int) (n16 int, ok bool) {
	switch {
	case m == 0:
	case f == bfloat16 && useAVX2:
		return dotPanelBulk(dotPanelBF16AVX2, h, ldh, m, w, ldw, n, out, ldo), true
	case f == binary16 && useF16C:
		return dotPanelBulk(dotPanelF16AVX2, h, ldh, m, w, ldw, n, out, ldo), true
	}
	return 0, false
}

// Tiles (tiles_amd64.s).

//go:noescape
func gemm4x24AVX2(c *float32, ldcb int, a *float32, ldab int, b *float32, ldbb int, k int)

//go:noescape
func gemm4x48AVX512(c *float32, ldcb int, a *float32, ldab int, b *float32, ldbb int, k int)

// hasTileKernel says whether gemmTiles has a register-blocked kernel.
var hasTileKernel = useAVX2

// tileWidth is the column width of gemmTiles' tiles.
func tileWidth() int {
	if useAVX512 {
		return 48
	}
	return 24
}

// gemmTiles: c[0:m4,0:n] += a[0:m4,0:k]·b[0:k,0:n] (strides in elements)
// with m4 a multiple of 4 and n of tileWidth(), in 4-row tiles. Strips of
// columns go outermost so that the strip of b (k×24 or k×48 floats, 24 or
// 48 KiB for k = 256) stays in L1 or L2 while every block of 4 rows passes
// over it.
func gemmTiles(c []float32, ldc int, a []float32, lda int, b []float32, ldb int, m4, n24, k int) {
	if m4 == 0 || n24 == 0 || k == 0 {
		return
	}
	_ = c[(m4-1)*ldc+n24-1]
	_ = a[(m4-1)*lda+k-1]
	_ = b[(k-1)*ldb+n24-1]
	if useAVX512 {
		for j := 0; j < n24; j += 48 {
			for i := 0; i < m4; i += 4 {
				gemm4x48AVX512(&c[i*ldc+j], ldc*4, &a[i*lda], lda*4, &b[j], ldb*4, k)
			}
		}
		return
	}
	for j := 0; j < n24; j += 24 {
		for i := 0; i < m4; i += 4 {
			gemm4x24AVX2(&c[i*ldc+j], ldc*4, &a[i*lda], lda*4, &b[j], ldb*4, k)
		}
	}
}

// Float16 and bfloat16 (float16_amd64.s).

//go:noescape
func widenF16AVX512(dst *float32, lddb int, src *uint16, ldsb int, rows, n int)

//go:noescape
func widenF16F16C(dst *float32, lddb int, src *uint16, ldsb int, rows, n int)

// widenBlockTo: dst[r*ldd+j] = float32(src[r*lds+j]) for r < rows, j <
// n. The assembly takes the largest multiple of its vector width; the
// rest of each row goes to the generic code.
func widenBlockTo(dst []float32, ldd int, src []uint16, lds, rows, n int) {
	if !useF16C || rows == 0 || n == 0 {
		for r := range rows {
			widenBlockGeneric(dst[r*ldd:], src[r*lds:], lds, 1, n)
		}
		return
	}
	nv := n &^ 15
	if useAVX512 {
		nv = n &^ 31
	}
	if nv > 0 {
		_ = dst[(rows-1)*ldd+nv-1]
		_ = src[(rows-1)*lds+nv-1]
		if useAVX512 {
			widenF16AVX512(unsafe.SliceData(dst), ldd*4, unsafe.SliceData(src), lds*2, rows, nv)
		} else {
			widenF16F16C(unsafe.SliceData(dst), ldd*4, unsafe.SliceData(src), lds*2, rows, nv)
		}
	}
	if nv < n {
		for r := 0; r < rows; r++ {
			widenBlockGeneric(dst[r*ldd+nv:r*ldd+n], src[r*lds+nv:], lds, 1, n-nv)
		}
	}
}

//go:noescape
func widenBF16AVX512(dst *float32, lddb int, src *uint16, ldsb int, rows, n int)

//go:noescape
func widenBF16AVX2(dst *float32, lddb int, src *uint16, ldsb int, rows, n int)

// widenBF16BlockTo: dst[r*ldd+j] = the bfloat16 src[r*lds+j] as float32
// for r < rows, j < n, as widenBlockTo: 32 at a time with AVX-512BW
// (VPMOVZXWD to 512 bits), 16 with AVX2, the rest of each row in Go.
func widenBF16BlockTo(dst []float32, ldd int, src []uint16, lds, rows, n int) {
	if !useAVX2 || rows == 0 || n == 0 {
		for r := range rows {
			widenBF16Generic(dst[r*ldd:], src[r*lds:], lds, 1, n)
		}
		return
	}
	nv := n &^ 15
	if useAVX512BW {
		nv = n &^ 31
	}
	if nv > 0 {
		_ = dst[(rows-1)*ldd+nv-1]
		_ = src[(rows-1)*lds+nv-1]
		if useAVX512BW {
			widenBF16AVX512(unsafe.SliceData(dst), ldd*4, unsafe.SliceData(src), lds*2, rows, nv)
		} else {
			widenBF16AVX2(unsafe.SliceData(dst), ldd*4, unsafe.SliceData(src), lds*2, rows, nv)
		}
	}
	if nv < n {
		for r := 0; r < rows; r++ {
			widenBF16Generic(dst[r*ldd+nv:r*ldd+n], src[r*lds+nv:], lds, 1, n-nv)
		}
	}
}

//go:noescape
func narrowF16C(dst *uint16, src *float32, n int)

// narrowFloat16Kernel runs NarrowFloat16's kernel on the first multiple
// of 8 and returns that count.
func narrowFloat16Kernel(dst []uint16, src []float32) int {
	n := len(src) &^ 7
	if !useF16C || n == 0 {
		return 0
	}
	_ = dst[n-1]
	narrowF16C(unsafe.SliceData(dst), unsafe.SliceData(src), n)
	return n
}

// Slabs (slabs_amd64.s): one full slab of float32, float16 or bfloat16
// weights.

//go:noescape
func axpySlabAVX2(y *float32, ldyb int, x *float32, ldxb int, w *float32, m, k int)

//go:noescape
func axpySlabF16AVX2(y *float32, ldyb int, x *float32, ldxb int, w *uint16, m, k int)

//go:noescape
func axpySlabF16AVX512(y *float32, ldyb int, x *float32, ldxb int, w *uint16, m, k int)

//go:noescape
func axpySlabBF16AVX512(y *float32, ldyb int, x *float32, ldxb int, w *uint16, m, k int)

//go:noescape
func axpySlabBF16AVX2(y *float32, ldyb int, x *float32, ldxb int, w *uint16, m, k int)

// axpySlabBulk runs kern, the slab kernel for w's type, as axpyPanel on one
// full slab, n = ldw = slab: y[i,0:64] += Σ x[i,k']·w[k',0:64] for i < m.
// It reports false, doing nothing, where there is no kernel.
func axpySlabBulk[W weight](kern func(y *float32, ldyb int, x *float32, ldxb int, w *W, m, k int), y []float32, ldy int, x []float32, ldx int, w []W, m, k int) bool {
	if !useAVX2 || m == 0 || k == 0 {
		return false
	}
	_ = y[(m-1)*ldy+slab-1]
	_ = x[(m-1)*ldx+k-1]
	_ = w[k*slab-1]
	kern(unsafe.SliceData(y), ldy*4, unsafe.SliceData(x), ldx*4, unsafe.SliceData(w), m, k)
	return true
}

// axpySlabKernel is axpySlabBulk on float32 weights.
func axpySlabKernel(y []float32, ldy int, x []float32, ldx int, w []float32, m, k int) bool {
	return axpySlabBulk(axpySlabAVX2, y, ldy, x, ldx, w, m, k)
}

// axpySlab16Kernel is axpySlabBulk on 16-bit weights of format h.
func axpySlab16Kernel(h half, y []float32, ldy int, x []float32, ldx int, w []uint16, m, k int) bool {
	switch {
	case h == bfloat16 && useAVX512BW:
		return axpySlabBulk(axpySlabBF16AVX512, y, ldy, x, ldx, w, m, k)
	case h == bfloat16:
		return axpySlabBulk(axpySlabBF16AVX2, y, ldy, x, ldx, w, m, k)
	case useAVX512:
		return axpySlabBulk(axpySlabF16AVX512, y, ldy, x, ldx, w, m, k)
	}
	return axpySlabBulk(axpySlabF16AVX2, y, ldy, x, ldx, w, m, k)
}

// Scales of quantised groups (quant_amd64.s).

//go:noescape
func scaleRowsAVX512(dst *float32, d *uint16, a *int8, n int)

//go:noescape
func scaleRowsAVX2(dst *float32, d *uint16, a *int8, n int)

// scaleRows: dst[g*slab+c] = ggmlnum.Scale(d[c], a[g*slab+c]) for g < n,
// c < slab.
func scaleRows(dst []float32, d []uint16, a []int8, n int) {
	if !useF16C || n == 0 {
		scaleRowsGeneric(dst, d, a, n)
		return
	}
	_, _, _ = dst[n*slab-1], d[slab-1], a[n*slab-1]
	if useAVX512 {
		scaleRowsAVX512(&dst[0], &d[0], &a[0], n)
		return
	}
	scaleRowsAVX2(&dst[0], &d[0], &a[0], n)
}

// GELU and exp (exp_amd64.s).

//go:noescape
func geluAVX2(x *float32, n int) int

//go:noescape
func expShiftedAVX2(dst *float64, src *float32, sub float32, n int) int

//go:noescape
func geluAVX512(x *float32, n int) int

//go:noescape
func expShiftedAVX512(dst *float64, src *float32, sub float32, n int) int

// expShifted runs the AVX-512 kernel sixteen at a time up to the first
// block with an argument beyond ±700 (or NaN), the AVX2 kernel over the
// blocks of four after it, and math.Exp over the rest: the tail, and any
// block the AVX2 kernel hands back.
func expShifted(dst []float64, src []float32, sub float32) {
	if !useAVX2 {
		expShiftedGeneric(dst, src, sub)
		return
	}
	n4 := len(src) &^ 3
	i := 0
	if useAVX512 && n4 >= 16 { // sixteen at a time while they are in range, then four
		i = expShiftedAVX512(&dst[0], &src[0], sub, n4)
	}
	for i < n4 {
		i += expShiftedAVX2(&dst[i], &src[i], sub, n4-i)
		if i < n4 {
			expShiftedGeneric(dst[i:i+4], src[i:i+4], sub)
			i += 4
		}
	}
	expShiftedGeneric(dst[n4:], src[n4:], sub)
}

// gelu runs the AVX-512 kernel sixteen at a time up to the first block
// whose exponent lies outside math.Exp's plain range (|a| > 700,
// infinities, NaN), the AVX2 kernel over the blocks of four after it, and
// geluGeneric over the rest: the tail, and any block the AVX2 kernel
// hands back.
func gelu(x []float32) {
	if !useAVX2 {
		geluGeneric(x)
		return
	}
	n4 := len(x) &^ 3
	i := 0
	if useAVX512 && n4 >= 16 { // sixteen at a time while they are in range, then four
		i = geluAVX512(&x[0], n4)
	}
	for i < n4 {
		i += geluAVX2(&x[i], n4-i)
		if i < n4 {
			geluGeneric(x[i : i+4])
			i += 4
		}
	}
	geluGeneric(x[n4:])
}
