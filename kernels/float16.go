package kernels

import "github.com/llorch/llorch-check/internal/ggmlnum"

// Float16 and bfloat16 weights through the panel kernels: the part the
// assembly takes widens them as it loads them (axpyPanel16Kernel,
// dotPanel16Kernel), the rest is widened into float32 scratch first;
// either way the bits are those of float32 weights holding the same
// values.

// widen: dst[r*n+j] = float32(src[r*lds+j]) for r < rows, j < n, src
// holding bits of format h.
func (h half) widen(dst []float32, src []uint16, lds, rows, n int) {
	h.widenTo(dst, n, src, lds, rows, n)
}

// widenTo is widen into rows of stride ldd: dst[r*ldd+j].
func (h half) widenTo(dst []float32, ldd int, src []uint16, lds, rows, n int) {
	if h == bfloat16 {
		widenBF16BlockTo(dst, ldd, src, lds, rows, n)
		return
	}
	widenBlockTo(dst, ldd, src, lds, rows, n)
}

// widenBlock is widenTo for float16 bits into rows of stride n.
func widenBlock(dst []float32, src []uint16, lds, rows, n int) {
	widenBlockTo(dst, n, src, lds, rows, n)
}

// axpyPanel16 is axpyPanel with 16-bit weights of format h: the kernel
// widens them as it loads them; the edges are widened first and go to
// the float32 code.
func axpyPanel16(h half, y []float32, ldy int, x []float32, ldx int, w []uint16, ldw int, n, m, k int) {
	n16, k4 := axpyPanel16Kernel(h, y, ldy, x, ldx, w, ldw, n, m, k)
	if k4 < k && n16 > 0 {
		axpyPanelWidened(h, y, ldy, x[k4:], ldx, w[k4*ldw:], ldw, n16, m, k-k4)
	}
	if n16 < n {
		axpyPanelWidened(h, y[n16:], ldy, x, ldx, w[n16:], ldw, n-n16, m, k)
	}
}

// dotPanel16 is dotPanel with 4 weight rows of 16-bit format f, widened
// in the kernel; the columns it leaves are widened first.
func dotPanel16(f half, h []float32, ldh, m int, w []uint16, ldw, n int, out []float32, ldo int) {
	n16, ok := dotPanel16Kernel(f, h, ldh, m, w, ldw, n, out, ldo)
	if !ok {
		dotPanelWidened(f, h, ldh, m, w, ldw, n, out, ldo)
		return
	}
	if n16 < n {
		buf := getScratch(4 * (n - n16))
		defer scratch.Put(buf)
		rest := *buf
		f.widen(rest, w[n16:], ldw, 4, n-n16)
		addDots(h[n16:], ldh, m, rest, n-n16, n-n16, out, ldo)
	}
}

// axpyPanelWidened is axpyPanel on 16-bit weights of format h, widened
// into float32 scratch first: the pure-Go build's axpyPanel16, and the
// edges of the assembly one, which then give the float32 kernels' bits.
func axpyPanelWidened(h half, y []float32, ldy int, x []float32, ldx int, w []uint16, ldw int, n, m, k int) {
	if n == 0 || m == 0 || k == 0 {
		return
	}
	buf := getScratch(k * n)
	defer scratch.Put(buf)
	h.widen(*buf, w, ldw, k, n)
	axpyPanel(y, ldy, x, ldx, *buf, n, n, m, k)
}

// dotPanelWidened is dotPanel on 4 weight rows of 16-bit format f,
// widened first.
func dotPanelWidened(f half, h []float32, ldh, m int, w []uint16, ldw, n int, out []float32, ldo int) {
	buf := getScratch(4 * n)
	defer scratch.Put(buf)
	f.widen(*buf, w, ldw, 4, n)
	dotPanel(h, ldh, m, *buf, n, n, out, ldo)
}

// NarrowFloat16 sets dst[i] to src[i] rounded to the nearest binary16,
// ties to even, for i < len(src), with ggmlnum.Float32To16's bits
// (beyond the range an infinity, a NaN quiet with its payload's top
// bits): a float16 KV cache's stores, eight at a time with F16C.
func NarrowFloat16(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	n := narrowFloat16Kernel(dst, src)
	for i := n; i < len(src); i++ {
		dst[i] = ggmlnum.Float32To16(src[i])
	}
}
