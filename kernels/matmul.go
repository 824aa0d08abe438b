package kernels

import "fmt"

// Name says which matrix kernels this build and CPU use, e.g.
// "avx2+fma, avx512 tiles, amx int8", "avx2+fma, avx512 tiles",
// "avx2+fma" or "generic" (pure Go).
func Name() string { return kernelName() }

// Blocking of the panel path of matmulCols (decode, and every M in the
// pure-Go build). A column tile of nTile floats of kBlock weight rows
// (128 KiB) stays in L2 while every block of mBlock activation rows passes
// over it; one call of the panel kernel then keeps mBlock rows of the
// output tile (16 KiB) and 4 weight rows of it (8 KiB) in L1. For decode
// (M = 1) the order streams each weight row segment exactly once.
const (
	nTile  = 512
	kBlock = 64
	mBlock = 8
)

// MatMulAcc computes dst[M,N] += x[M,K]·w[K,N], w row-major [K,N] as HF's
// Conv1D stores it. Column chunks are shared out dynamically, so each weight
// is read by one goroutine exactly once per call whatever M is (decode
// streams the weights with every core; a batch of M sequences costs one
// pass), and a core that another process holds up simply takes fewer
// chunks instead of stalling the step.
func MatMulAcc(dst, x []float32, w Matrix, M, K, N int) {
	checkShape(w, K, N)
	matmul(dst, x, w, M, K, N, start{})
}

// MatMulBias computes dst[M,N] = bias[N] + x[M,K]·w[K,N] (zeros for a nil
// bias): MatMulAcc's bits on dst first set to the bias in each row, each
// worker setting its own columns just before adding to them, while they
// are in cache (set by the caller, the copies were serial work).
func MatMulBias(dst, x []float32, w Matrix, bias []float32, M, K, N int) {
	checkShape(w, K, N)
	if bias != nil && len(bias) < N {
		panic(fmt.Sprintf("kernels: MatMulBias with a bias of %d for %d columns", len(bias), N))
	}
	matmul(dst, x, w, M, K, N, start{zero: bias == nil, bias: bias})
}

func checkShape(w Matrix, K, N int) {
	if w.q != nil && (w.q.transposed || w.q.k != K || w.q.n != N) {
		panic(fmt.Sprintf("kernels: MatMulAcc of a %dx%d quantised matrix (transposed %t) as %dx%d", w.q.k, w.q.n, w.q.transposed, K, N))
	}
	if w.s != nil && (w.t || w.s.k != K || w.s.n != N) {
		panic(fmt.Sprintf("kernels: MatMulAcc of a %dx%d slabbed matrix as %dx%d", w.s.k, w.s.n, K, N))
	}
}

// start is what a product's columns of dst hold before the sums are
// added: dst as it is (MatMulAcc), zeros, or a bias in every row.
type start struct {
	zero bool
	bias []float32
}

// set writes the start into columns j0..j1 of dst's M rows.
func (s start) set(dst []float32, M, N, j0, j1 int) {
	switch {
	case s.bias != nil:
		for i := range M {
			copy(dst[i*N+j0:i*N+j1], s.bias[j0:j1])
		}
	case s.zero:
		for i := range M {
			clear(dst[i*N+j0 : i*N+j1])
		}
	}
}

// matmul is MatMulAcc from the given start: each worker sets its own
// columns of dst just before adding to them.
func matmul(dst, x []float32, w Matrix, M, K, N int, st start) {
	if w.q != nil {
		w.q.matmul(dst, x, M, K, N, st)
		return
	}
	cols := func(j0, j1 int) {
		st.set(dst, M, N, j0, j1)
		matmulCols(dst, x, w, M, K, N, j0, j1)
	}
	if M*K*N < ParallelMinWork {
		cols(0, N)
		return
	}
	chunk := colChunk
	if w.isHalf() {
		chunk *= 2
	}
	ParallelRange(N, chunk, cols)
}

// colChunk is the unit of work of MatMulAcc: small enough that GPT-2's
// narrowest matrix (768 columns) gives every worker several, large enough
// (768 B per weight row) to stream well. 16-bit float chunks are twice as wide,
// the same bytes per row: at 192 columns (384 B) a decode GEMV streamed
// 17 GB/s from DRAM, at 384 columns 21 GB/s (float32 at 192: 23).
// Quantised chunks stream contiguous slabs whatever their width. Every
// width is a multiple of both tile widths (24, 48), so the columns left to
// the edge code are the same for every weight type and the bits agree.
const colChunk = 192

// matmulCols is MatMulAcc restricted to columns j0..j1. Each kSum-deep
// block of products is summed from zero and then added to dst, as BLAS
// kernels do: one FMA chain over all of K (3072 terms in GPT-2's
// mlp.c_proj) had 2–3.5x PyTorch float32's error against float64 on the
// 124M shapes, where chains of kSum are level with it. The tile kernel
// (prefill, batched decode) sums in registers; the panel kernel (decode,
// and the tiles' edges) in acc. Both add a block in k order from zero, so
// a sequence decoded in a batch gets the same bits as alone, and every
// multiply-add is fused in both, narrow edges and K%4 rows included
// (axpyPanel), so a row's bits never depend on the rows beside it.
//
// 16-bit float weights (float16, bfloat16) go to the panel kernel's
// twins, which widen them as they load them; for the tile kernel a block
// is widened into
// float32 scratch first (still in L2 when the kernel reads it, and reused
// by every row). Either way the bits are those of float32 weights holding
// the same values.
func matmulCols(dst, x []float32, w Matrix, M, K, N, j0, j1 int) {
	n := j1 - j0
	maxPanel := panelMaxRows
	if w.s != nil {
		maxPanel = slabPanelMaxRows
	}
	tiles := M > maxPanel && hasTileKernel
	switch {
	case w.s != nil && !tiles:
		w.s.matmulPanel(dst, x, M, K, N, j0, j1)
		return
	}
	acc := getScratch(M * n)
	defer scratch.Put(acc)
	var buf *[]float32
	if (w.h16 != nil || w.s != nil) && tiles {
		buf = getScratch(min(kSum, K) * n)
		defer scratch.Put(buf)
	}
	for k0 := 0; k0 < K; k0 += kSum {
		kk := min(kSum, K-k0)
		xb := x[k0:]
		if !tiles {
			a := (*acc)[:M*n]
			clear(a)
			panelLoop(M, kk, n, func(jt, k1, m0, nn, kb, mm int) {
				switch {
				case w.h16 != nil:
					axpyPanel16(w.form, a[m0*n+jt:], n, xb[m0*K+k1:], K, w.h16[(k0+k1)*N+j0+jt:], N, nn, mm, kb)
				default:
					axpyPanel(a[m0*n+jt:], n, xb[m0*K+k1:], K, w.f32[(k0+k1)*N+j0+jt:], N, nn, mm, kb)
				}
			})
			addRows(dst[j0:], N, a, n, M)
			continue
		}
		var wb []float32
		ldw := N
		switch {
		case w.s != nil:
			w.s.gather(*buf, k0, j0, kk, n)
			wb, ldw = *buf, n
		case w.h16 != nil:
			w.form.widen(*buf, w.h16[k0*N+j0:], N, kk, n)
			wb, ldw = *buf, n
		default:
			wb = w.f32[k0*N+j0:]
		}
		tw := tileWidth()
		m4, nt := M&^3, n/tw*tw
		gemmTiles(dst[j0:], N, xb, K, wb, ldw, m4, nt, kk)
		if e := n - nt; e > 0 { // right edge, all rows
			a := (*acc)[:M*e]
			clear(a)
			axpyPanel(a, e, xb, K, wb[nt:], ldw, e, M, kk)
			addRows(dst[j0+nt:], N, a, e, M)
		}
		if r := M - m4; r > 0 && nt > 0 { // bottom rows, tile columns
			a := (*acc)[:r*nt]
			clear(a)
			axpyPanel(a, nt, xb[m4*K:], K, wb, ldw, nt, r, kk)
			addRows(dst[m4*N+j0:], N, a, nt, r)
		}
	}
}

// panelLoop calls kern over the panel kernel's blocking of an [M,K]·[K,n]
// product: column tiles of nTile, kBlock weight rows, mBlock rows of x.
func panelLoop(M, K, n int, kern func(jt, k0, m0, nn, kk, mm int)) {
	for jt := 0; jt < n; jt += nTile {
		for k0 := 0; k0 < K; k0 += kBlock {
			for m0 := 0; m0 < M; m0 += mBlock {
				kern(jt, k0, m0, min(nTile, n-jt), min(kBlock, K-k0), min(mBlock, M-m0))
			}
		}
	}
}

// panelMaxRows is the largest M served by the panel kernel alone. From 4
// rows on the tile kernel wins even though its 48-column strips read the
// weights less contiguously: measured with weights beyond L3 (768×3072,
// 2 threads) at M = 4 it streams 26 GB/s against the panel's 13, at M = 8
// 23 against 7.4; at M = 1 and 2 the two are equal (no full tile rows).
const panelMaxRows = 3

// slabPanelMaxRows is panelMaxRows for slabbed matrices, whose panel
// kernels keep rows of y in registers while a slab streams past: each
// further row re-reads the slab from L1 instead of memory.
const slabPanelMaxRows = 8
