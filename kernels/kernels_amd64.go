//go:build amd64 && !purego

package kernels

import (
	"os"
	"unsafe"

	"golang.org/x/sys/cpu"
)

// The AVX2+FMA kernels of kernels_amd64.s, used when the CPU has both and
// LLORCH_KERNELS is not "generic" (which forces the pure-Go kernels, to
// compare them on one machine).
var useAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA && os.Getenv("LLORCH_KERNELS") != "generic"

//go:noescape
func axpyPanelAVX2(y *float32, ldyb int, x *float32, ldxb int, w *float32, ldwb int, n, m, k int)

//go:noescape
func dotPanelAVX2(h *float32, ldhb int, m int, w *float32, ldwb int, n int, out *float32, ldob int)

//go:noescape
func gemm4x24AVX2(c *float32, ldcb int, a *float32, ldab int, b *float32, ldbb int, k int)

//go:noescape
func gemm4x48AVX512(c *float32, ldcb int, a *float32, ldab int, b *float32, ldbb int, k int)

//go:noescape
func widenF16AVX512(dst *float32, lddb int, src *uint16, ldsb int, rows, n int)

//go:noescape
func widenF16F16C(dst *float32, lddb int, src *uint16, ldsb int, rows, n int)

//go:noescape
func axpyPanelF16AVX2(y *float32, ldyb int, x *float32, ldxb int, w *uint16, ldwb int, n, m, k int)

//go:noescape
func dotPanelF16AVX2(h *float32, ldhb int, m int, w *uint16, ldwb int, n int, out *float32, ldob int)

//go:noescape
func addVecAVX2(dst, src *float32, n int)

//go:noescape
func axpySlabAVX2(y *float32, ldyb int, x *float32, ldxb int, w *float32, m, k int)

//go:noescape
func axpySlabF16AVX2(y *float32, ldyb int, x *float32, ldxb int, w *uint16, m, k int)

// axpySlab is axpyPanel (or axpyPanel16) on one full slab, n = ldw = slab:
// y[i,0:64] += Σ x[i,k']·w[k',0:64] for i < m.
func (s *slabs) axpySlab(y []float32, ldy int, x []float32, ldx int, at, m, k int) {
	if !useAVX2 || m == 0 || k == 0 {
		s.axpySlabGeneric(y, ldy, x, ldx, at, m, k)
		return
	}
	_ = y[(m-1)*ldy+slab-1]
	_ = x[(m-1)*ldx+k-1]
	if s.f16 != nil {
		_ = s.f16[at+k*slab-1]
		axpySlabF16AVX2(unsafe.SliceData(y), ldy*4, unsafe.SliceData(x), ldx*4, &s.f16[at], m, k)
		return
	}
	_ = s.f32[at+k*slab-1]
	axpySlabAVX2(unsafe.SliceData(y), ldy*4, unsafe.SliceData(x), ldx*4, &s.f32[at], m, k)
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

// useF16C says whether float16 weights are widened by VCVTPH2PS.
var useF16C = useAVX2 && cpu.X86.HasF16C

// useAVX512 selects the 512-bit tile kernel for prefill (LLORCH_KERNELS=avx2
// keeps the 256-bit one, to compare).
var useAVX512 = useAVX2 && cpu.X86.HasAVX512F && os.Getenv("LLORCH_KERNELS") != "avx2"

func kernelName() string {
	if useAVX512 {
		return "avx2+fma, avx512 tiles"
	}
	if useAVX2 {
		return "avx2+fma"
	}
	return "generic"
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
	n16, k4 := n&^15, k&^3
	if n16 > 0 && k4 > 0 {
		// The last elements touched, so that a bad stride panics here
		// instead of corrupting memory in the assembly.
		_ = y[(m-1)*ldy+n16-1]
		_ = x[(m-1)*ldx+k4-1]
		_ = w[(k4-1)*ldw+n16-1]
		axpyPanelAVX2(unsafe.SliceData(y), ldy*4, unsafe.SliceData(x), ldx*4, unsafe.SliceData(w), ldw*4, n16, m, k4)
	}
	if n16 < n && k4 > 0 {
		axpyEdge(y[n16:], ldy, x, ldx, w[n16:], ldw, n-n16, m, k4)
	}
	if k4 < k {
		axpyRows(y, ldy, x[k4:], ldx, w[k4*ldw:], ldw, n, m, k-k4)
	}
}

// axpyRows is axpyPanel on k < 4 rows of w: x's and w's rows are copied
// into scratch four deep, the rest zero, so that they too are fused
// multiply-adds, as the tile kernel sums them.
func axpyRows(y []float32, ldy int, x []float32, ldx int, w []float32, ldw int, n, m, k int) {
	buf := getScratch(4 * (m + n))
	defer scratch.Put(buf)
	xb, wb := (*buf)[:4*m], (*buf)[4*m:4*(m+n)]
	clear(*buf)
	for i := range m {
		copy(xb[i*4:i*4+k], x[i*ldx:i*ldx+k])
	}
	for r := range k {
		copy(wb[r*n:(r+1)*n], w[r*ldw:r*ldw+n])
	}
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
	for i := range m {
		copy(yb[i*16:i*16+n], y[i*ldy:i*ldy+n])
	}
	for r := range k {
		copy(wb[r*16:r*16+n], w[r*ldw:r*ldw+n])
	}
	_ = x[(m-1)*ldx+k-1]
	axpyPanelAVX2(unsafe.SliceData(yb), 16*4, unsafe.SliceData(x), ldx*4, unsafe.SliceData(wb), 16*4, 16, m, k)
	for i := range m {
		copy(y[i*ldy:i*ldy+n], yb[i*16:i*16+n])
	}
}

// dotPanel: out[i*ldo+r] = h[i,0:n]·w[r,0:n] for r < 4, i < m.
func dotPanel(h []float32, ldh, m int, w []float32, ldw, n int, out []float32, ldo int) {
	if !useAVX2 || m == 0 {
		dotPanelGeneric(h, ldh, m, w, ldw, n, out, ldo)
		return
	}
	n16 := n &^ 15
	_ = h[(m-1)*ldh+n-1]
	_ = w[3*ldw+n-1]
	_ = out[(m-1)*ldo+3]
	dotPanelAVX2(unsafe.SliceData(h), ldh*4, m, unsafe.SliceData(w), ldw*4, n16, unsafe.SliceData(out), ldo*4)
	if n16 < n {
		for i := 0; i < m; i++ {
			hi := h[i*ldh+n16 : i*ldh+n]
			for r := 0; r < 4; r++ {
				out[i*ldo+r] += dotGeneric(hi, w[r*ldw+n16:r*ldw+n])
			}
		}
	}
}

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

// widenBlock: dst[r*n+j] = float32(src[r*lds+j]) for r < rows, j < n. The
// assembly takes the largest multiple of its vector width; the rest of each
// row goes to the generic code.
func widenBlock(dst []float32, src []uint16, lds, rows, n int) {
	if !useF16C || rows == 0 || n == 0 {
		widenBlockGeneric(dst, src, lds, rows, n)
		return
	}
	nv := n &^ 15
	if useAVX512 {
		nv = n &^ 31
	}
	if nv > 0 {
		_ = dst[(rows-1)*n+nv-1]
		_ = src[(rows-1)*lds+nv-1]
		if useAVX512 {
			widenF16AVX512(unsafe.SliceData(dst), n*4, unsafe.SliceData(src), lds*2, rows, nv)
		} else {
			widenF16F16C(unsafe.SliceData(dst), n*4, unsafe.SliceData(src), lds*2, rows, nv)
		}
	}
	if nv < n {
		for r := 0; r < rows; r++ {
			widenBlockGeneric(dst[r*n+nv:r*n+n], src[r*lds+nv:], lds, 1, n-nv)
		}
	}
}

// axpyPanel16 is axpyPanel with float16 weights, widened in the kernel
// (VCVTPH2PS); the edges are widened first and go to the float32 code.
func axpyPanel16(y []float32, ldy int, x []float32, ldx int, w []uint16, ldw int, n, m, k int) {
	if !useF16C || m == 0 {
		axpyPanelWidened(y, ldy, x, ldx, w, ldw, n, m, k)
		return
	}
	n16, k4 := n&^15, k&^3
	if n16 > 0 && k4 > 0 {
		_ = y[(m-1)*ldy+n16-1]
		_ = x[(m-1)*ldx+k4-1]
		_ = w[(k4-1)*ldw+n16-1]
		axpyPanelF16AVX2(unsafe.SliceData(y), ldy*4, unsafe.SliceData(x), ldx*4, unsafe.SliceData(w), ldw*2, n16, m, k4)
	}
	if k4 < k && n16 > 0 {
		axpyPanelWidened(y, ldy, x[k4:], ldx, w[k4*ldw:], ldw, n16, m, k-k4)
	}
	if n16 < n {
		axpyPanelWidened(y[n16:], ldy, x, ldx, w[n16:], ldw, n-n16, m, k)
	}
}

// dotPanel16 is dotPanel with 4 float16 weight rows, widened in the kernel.
func dotPanel16(h []float32, ldh, m int, w []uint16, ldw, n int, out []float32, ldo int) {
	if !useF16C || m == 0 {
		dotPanelWidened(h, ldh, m, w, ldw, n, out, ldo)
		return
	}
	n16 := n &^ 15
	_ = h[(m-1)*ldh+n-1]
	_ = w[3*ldw+n-1]
	_ = out[(m-1)*ldo+3]
	dotPanelF16AVX2(unsafe.SliceData(h), ldh*4, m, unsafe.SliceData(w), ldw*2, n16, unsafe.SliceData(out), ldo*4)
	if n16 < n {
		buf := getScratch(4 * (n - n16))
		defer scratch.Put(buf)
		rest := *buf
		widenBlock(rest, w[n16:], ldw, 4, n-n16)
		for i := 0; i < m; i++ {
			hi := h[i*ldh+n16 : i*ldh+n]
			for r := 0; r < 4; r++ {
				out[i*ldo+r] += dotGeneric(hi, rest[r*(n-n16):(r+1)*(n-n16)])
			}
		}
	}
}

//go:noescape
func axpyPanelQAVX2(y *float32, ldyb int, x *float32, ldxb int, q *int8, ldqb int, s, o *float32, n, m, k int)

//go:noescape
func axpyPanelQAVX512(y *float32, ldyb int, x *float32, ldxb int, q *int8, ldqb int, s, o *float32, n, m, k int)

//go:noescape
func axpyPanelQ4AVX512(y *float32, ldyb int, x *float32, ldxb int, q *byte, s, o *float32, min, n, m, k int)

//go:noescape
func dequantQ4AVX512(dst *float32, lddb int, q *byte, s, o *float32, min, rows, n int)

//go:noescape
func dequantQAVX2(dst *float32, lddb int, q *int8, ldqb int, s, o *float32, rows, n int)

// axpyPiece is axpyPanel on block rows r0..r0+k (one group), columns
// c..c+n of its slab: the assembly takes 16-column multiples of 4 rows,
// the edges go through float32 scratch.
func (b *block) axpyPiece(y []float32, ldy int, x []float32, ldx int, r0, c, n, m, k int) {
	b.unpack()
	if b.q4 != nil {
		b.axpyPiece4(y, ldy, x, ldx, r0, c, n, m, k)
		return
	}
	if !useAVX2 || m == 0 {
		b.axpyPieceWidened(y, ldy, x, ldx, r0, c, n, m, k)
		return
	}
	n16, k4 := n&^15, k&^3
	if n16 > 0 && k4 > 0 {
		_ = y[(m-1)*ldy+n16-1]
		_ = x[(m-1)*ldx+k4-1]
		_ = b.q[(r0+k4-1)*slab+c+n16-1]
		s, o := b.scaleRow(r0, c)
		_ = s[n16-1]
		n32 := 0
		if useAVX512 {
			n32 = n &^ 31
			if n32 > 0 {
				axpyPanelQAVX512(unsafe.SliceData(y), ldy*4, unsafe.SliceData(x), ldx*4, &b.q[r0*slab+c], slab, &s[0], at(o, 0), n32, m, k4)
			}
		}
		if n32 < n16 {
			axpyPanelQAVX2(&y[n32], ldy*4, unsafe.SliceData(x), ldx*4, &b.q[r0*slab+c+n32], slab, &s[n32], at(o, n32), n16-n32, m, k4)
		}
	}
	if k4 < k && n16 > 0 {
		b.axpyPieceWidened(y, ldy, x[k4:], ldx, r0+k4, c, n16, m, k-k4)
	}
	if n16 < n {
		b.axpyPieceWidened(y[n16:], ldy, x, ldx, r0, c+n16, n-n16, m, k)
	}
}

// at is &o[i], or nil for no offsets (the kernels' signal).
func at(o []float32, i int) *float32 {
	if o == nil {
		return nil
	}
	return &o[i]
}

// dequantPiece: dst[r*ldd+j] = the weight at block row r0+r, column c+j,
// for r < rows (one group), j < n.
func (b *block) dequantPiece(dst []float32, ldd, r0, c, rows, n int) {
	b.unpack()
	if b.q4 != nil {
		b.dequantPiece4(dst, ldd, r0, c, rows, n)
		return
	}
	nv := 0
	if useAVX2 {
		nv = n &^ 15
	}
	if nv > 0 && rows > 0 {
		_ = dst[(rows-1)*ldd+nv-1]
		_ = b.q[(r0+rows-1)*slab+c+nv-1]
		s, o := b.scaleRow(r0, c)
		_ = s[nv-1]
		dequantQAVX2(unsafe.SliceData(dst), ldd*4, &b.q[r0*slab+c], slab, &s[0], at(o, 0), rows, nv)
	}
	if nv < n {
		b.dequantGeneric(dst[nv:], ldd, r0, c+nv, rows, n-nv)
	}
}

// nibbleStrip is how many columns from c the nibble kernels take: a whole
// slab, or its first half, starting at the slab's first column.
func nibbleStrip(c, n int) int {
	switch {
	case !useAVX512 || c != 0:
		return 0
	case n >= slab:
		return slab
	case n >= slab/2:
		return slab / 2
	}
	return 0
}

// axpyPiece4 is axpyPiece on nibbles: AVX-512 for the slab's strip, the
// rest (and other CPUs) through float32 scratch.
func (b *block) axpyPiece4(y []float32, ldy int, x []float32, ldx int, r0, c, n, m, k int) {
	nv := nibbleStrip(c, n)
	if nv > 0 && m > 0 && k > 0 {
		_ = y[(m-1)*ldy+nv-1]
		_ = x[(m-1)*ldx+k-1]
		_ = b.q4[(r0+k)*slab/2-1]
		s, o := b.scaleRow(r0, 0)
		_ = s[nv-1]
		axpyPanelQ4AVX512(unsafe.SliceData(y), ldy*4, unsafe.SliceData(x), ldx*4, &b.q4[r0*slab/2], &s[0], at(o, 0), int(b.min), nv, m, k)
	}
	if nv < n {
		b.axpyPieceWidened(y[nv:], ldy, x, ldx, r0, c+nv, n-nv, m, k)
	}
}

// dequantPiece4 is dequantPiece on nibbles.
func (b *block) dequantPiece4(dst []float32, ldd, r0, c, rows, n int) {
	nv := nibbleStrip(c, n)
	if nv > 0 && rows > 0 {
		_ = dst[(rows-1)*ldd+nv-1]
		_ = b.q4[(r0+rows)*slab/2-1]
		s, o := b.scaleRow(r0, 0)
		_ = s[nv-1]
		dequantQ4AVX512(unsafe.SliceData(dst), ldd*4, &b.q4[r0*slab/2], &s[0], at(o, 0), int(b.min), rows, nv)
	}
	if nv < n {
		b.dequantGeneric(dst[nv:], ldd, r0, c+nv, rows, n-nv)
	}
}

//go:noescape
func scaleRowsAVX512(dst *float32, d *uint16, a *int8, n int)

//go:noescape
func unpackRows2AVX512(dst *int8, lo, hi *byte, min, k int)

//go:noescape
func unpackRows1AVX512(dst *int8, lo, hi *byte, min, k int)

//go:noescape
func scaleRowsAVX2(dst *float32, d *uint16, a *int8, n int)

//go:noescape
func unpackRowsAVX2(dst *int8, lo, hi *byte, hbits, min, k int)

// useAVX512BW: the byte-lane kernels that unpack 5- and 6-bit integers.
var useAVX512BW = useAVX512 && cpu.X86.HasAVX512BW

// nibbleKernels: the AVX-512 kernels read nibbles as they are; elsewhere
// a block unpacks them to int8 for the AVX2 int8 kernels.
var nibbleKernels = useAVX512

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

// unpackRows is unpackRowsGeneric.
func unpackRows(dst []int8, lo, hi []byte, hbits int, min int8, k int) {
	if k == 0 || hbits < 0 || hbits > 2 || !useAVX2 {
		unpackRowsGeneric(dst, lo, hi, hbits, min, k)
		return
	}
	_, _ = dst[k*slab-1], lo[k*slab/2-1]
	if hbits == 0 {
		unpackRowsAVX2(&dst[0], &lo[0], nil, 0, int(min), k)
		return
	}
	_ = hi[k*slab*hbits/8-1]
	if !useAVX512BW {
		unpackRowsAVX2(&dst[0], &lo[0], &hi[0], hbits, int(min), k)
		return
	}
	if hbits == 2 {
		unpackRows2AVX512(&dst[0], &lo[0], &hi[0], int(min), k)
		return
	}
	unpackRows1AVX512(&dst[0], &lo[0], &hi[0], int(min), k)
}

//go:noescape
func geluAVX2(x *float32, n int) int

//go:noescape
func expShiftedAVX2(dst *float64, src *float32, sub float32, n int) int

// expShifted runs the AVX2 kernel over blocks of four and math.Exp over
// the rest: the tail, and any block it hands back (an argument beyond
// ±700, or NaN).
func expShifted(dst []float64, src []float32, sub float32) {
	if !useAVX2 {
		expShiftedGeneric(dst, src, sub)
		return
	}
	n4 := len(src) &^ 3
	for i := 0; i < n4; {
		i += expShiftedAVX2(&dst[i], &src[i], sub, n4-i)
		if i < n4 {
			expShiftedGeneric(dst[i:i+4], src[i:i+4], sub)
			i += 4
		}
	}
	expShiftedGeneric(dst[n4:], src[n4:], sub)
}

// gelu runs the AVX2 kernel over blocks of four and geluGeneric over the
// rest: the tail, and any block the kernel hands back because an exponent
// lies outside math.Exp's plain range (|a| > 700, infinities, NaN).
func gelu(x []float32) {
	if !useAVX2 {
		geluGeneric(x)
		return
	}
	n4 := len(x) &^ 3
	for i := 0; i < n4; {
		i += geluAVX2(&x[i], n4-i)
		if i < n4 {
			geluGeneric(x[i : i+4])
			i += 4
		}
	}
	geluGeneric(x[n4:])
}

//go:noescape
func axpySlabQAVX512(y *float32, ldyb int, x *float32, ldxb int, q *int8, s, o *float32, group, groups, m int)

//go:noescape
func axpySlabQRows4AVX512(y *float32, ldyb int, x *float32, ldxb int, q *int8, s, o *float32, group, groups int)

//go:noescape
func axpySlabQ4Rows4AVX512(y *float32, ldyb int, x *float32, ldxb int, q *byte, s, o *float32, min, group, groups int)

//go:noescape
func axpySlabQHAVX512(y, x *float32, lo, hi *byte, s, o *float32, buf *int8, hbits, min, group, groups int)

//go:noescape
func axpySlabQ4AVX512(y *float32, ldyb int, x *float32, ldxb int, q *byte, s, o *float32, min, group, groups, m int)

// axpySlab is axpyPanel on the block's full slab strip through all its
// k rows, whole groups, in one kernel call; it reports false, doing
// nothing, where there is no such kernel.
func (b *block) axpySlab(y []float32, ldy int, x []float32, ldx int, m, k int) bool {
	if !useAVX512 || m == 0 || k == 0 || b.first != 0 || k%b.group != 0 {
		return false
	}
	G := k / b.group
	_ = y[(m-1)*ldy+slab-1]
	_ = x[(m-1)*ldx+k-1]
	_ = b.s[G*slab-1]
	if b.o != nil {
		_ = b.o[G*slab-1]
	}
	s, o := &b.s[0], at(b.o, 0)
	if b.q4 != nil {
		_ = b.q4[k*slab/2-1]
		q, i := &b.q4[0], 0
		for ; i+4 <= m; i += 4 {
			axpySlabQ4Rows4AVX512(&y[i*ldy], ldy*4, &x[i*ldx], ldx*4, q, s, o, int(b.min), b.group, G)
		}
		if i < m {
			axpySlabQ4AVX512(&y[i*ldy], ldy*4, &x[i*ldx], ldx*4, q, s, o, int(b.min), b.group, G, m-i)
		}
		return true
	}
	if b.q == nil && m < 4 && useAVX512BW {
		// Each group's rows unpacked just before their FMAs, into a
		// scratch that stays in L1, so that the stream of packed
		// integers overlaps the arithmetic.
		if len(b.buf.q) < b.group*slab {
			b.buf.q = make([]int8, max(b.group, kSum)*slab)
		}
		_ = b.lo[k*slab/2-1]
		_ = b.hi[k*slab*b.hbits/8-1]
		for i := range m {
			axpySlabQHAVX512(&y[i*ldy], &x[i*ldx], &b.lo[0], &b.hi[0], s, o, &b.buf.q[0], b.hbits, int(b.min), b.group, G)
		}
		return true
	}
	b.unpack()
	_ = b.q[k*slab-1]
	q, i := &b.q[0], 0
	for ; i+4 <= m; i += 4 { // four rows share each weight formed
		axpySlabQRows4AVX512(&y[i*ldy], ldy*4, &x[i*ldx], ldx*4, q, s, o, b.group, G)
	}
	if i < m {
		axpySlabQAVX512(&y[i*ldy], ldy*4, &x[i*ldx], ldx*4, q, s, o, b.group, G, m-i)
	}
	return true
}
