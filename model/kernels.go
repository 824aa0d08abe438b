package model

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// KernelName says which matrix kernels this build and CPU use, e.g.
// "avx2+fma, avx512 tiles", "avx2+fma" or "generic" (pure Go).
func KernelName() string { return kernelName() }

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

// matmulAcc computes dst[M,N] += x[M,K]·w[K,N], w row-major [K,N] as HF's
// Conv1D stores it. Column chunks are shared out dynamically, so each weight
// is read by one goroutine exactly once per call whatever M is (decode
// streams the weights with every core; a batch of M sequences costs one
// pass), and a core that another process holds up simply takes fewer
// chunks instead of stalling the step.
func matmulAcc(dst, x []float32, w matrix, M, K, N int) {
	if M*K*N < parallelMinWork {
		matmulCols(dst, x, w, M, K, N, 0, N)
		return
	}
	chunk := colChunk
	if w.f16 != nil {
		chunk *= 2
	}
	chunks := (N + chunk - 1) / chunk
	parallelFor(chunks, func(c int) {
		matmulCols(dst, x, w, M, K, N, c*chunk, min((c+1)*chunk, N))
	})
}

// colChunk is the unit of work of matmulAcc: small enough that GPT-2's
// narrowest matrix (768 columns) gives every worker several, large enough
// (768 B per weight row) to stream well. Float16 chunks are twice as wide,
// the same bytes per row: at 192 columns (384 B) a decode GEMV streamed
// 17 GB/s from DRAM, at 384 columns 21 GB/s (float32 at 192: 23).
const colChunk = 192

// parallelFor runs fn(0..n-1) on up to GOMAXPROCS goroutines, the caller
// being one of them, each taking the next index as it becomes free.
func parallelFor(n int, fn func(i int)) {
	workers := min(n, runtime.GOMAXPROCS(0))
	var next atomic.Int64
	work := func() {
		for {
			i := int(next.Add(1) - 1)
			if i >= n {
				return
			}
			fn(i)
		}
	}
	var wg sync.WaitGroup
	for range workers - 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			work()
		}()
	}
	work()
	wg.Wait()
}

// matmulCols is matmulAcc restricted to columns j0..j1. Float16 weights
// go to the panel kernel's float16 twin for decode, which widens them as
// it loads them; for the tile kernel they are widened into float32
// scratch one kTile-deep block at a time (still in L2 when the kernel
// reads it, and reused by every row). Every kernel adds in k order
// whatever the blocking, so float16 weights give the same bits as float32
// weights holding the same values.
func matmulCols(dst, x []float32, w matrix, M, K, N, j0, j1 int) {
	n := j1 - j0
	switch {
	case w.f16 == nil:
		matmulBlock(dst[j0:], N, x, K, w.f32[j0:], N, M, K, n)
	case M <= panelMaxRows || !hasTileKernel:
		w16 := w.f16[j0:]
		panelLoop(M, K, n, func(jt, k0, m0, nn, kk, mm int) {
			axpyPanel16(dst[j0+m0*N+jt:], N, x[m0*K+k0:], K, w16[k0*N+jt:], N, nn, mm, kk)
		})
	default:
		buf := getScratch(min(kTile, K) * n)
		defer scratch.Put(buf)
		for k0 := 0; k0 < K; k0 += kTile {
			kk := min(kTile, K-k0)
			widenBlock(*buf, w.f16[k0*N+j0:], N, kk, n)
			matmulBlock(dst[j0:], N, x[k0:], K, *buf, n, M, kk, n)
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

// matmulBlock computes dst[M,0:n] += x[M,0:K]·w[K,0:n] (strides ldd, ldx,
// ldw in elements). Decode (M <= 3) uses the panel kernel, which streams
// each weight row segment once; larger M (batched decode, prefill) uses
// the register-blocked tile kernel on the largest 4-row × tile-width part
// and the panel kernel on the edges.
func matmulBlock(dst []float32, ldd int, x []float32, ldx int, w []float32, ldw int, M, K, n int) {
	if M <= panelMaxRows || !hasTileKernel {
		panelLoop(M, K, n, func(jt, k0, m0, nn, kk, mm int) {
			axpyPanel(dst[m0*ldd+jt:], ldd, x[m0*ldx+k0:], ldx, w[k0*ldw+jt:], ldw, nn, mm, kk)
		})
		return
	}
	tw := tileWidth()
	m4, nt := M&^3, n/tw*tw
	for k0 := 0; k0 < K; k0 += kTile {
		kk := min(kTile, K-k0)
		gemmTiles(dst, ldd, x[k0:], ldx, w[k0*ldw:], ldw, m4, nt, kk)
		if nt < n { // right edge, all rows
			axpyPanel(dst[nt:], ldd, x[k0:], ldx, w[k0*ldw+nt:], ldw, n-nt, M, kk)
		}
		if m4 < M { // bottom edge, tile columns
			axpyPanel(dst[m4*ldd:], ldd, x[m4*ldx+k0:], ldx, w[k0*ldw:], ldw, nt, M-m4, kk)
		}
	}
}

// panelMaxRows is the largest M served by the panel kernel alone. From 4
// rows on the tile kernel wins even though its 48-column strips read the
// weights less contiguously: measured with weights beyond L3 (768×3072,
// 2 threads) at M = 4 it streams 26 GB/s against the panel's 13, at M = 8
// 23 against 7.4; at M = 1 and 2 the two are equal (no full tile rows).
const panelMaxRows = 3

// kTile is the depth of one tile-kernel call: a 24-column strip of the
// weights is 24 KiB, within L1 (a 48-column one 48 KiB, L1 on Zen 5).
const kTile = 256

// axpyPanelGeneric is the reference semantics of axpyPanel:
// y[i,0:n] += Σ_{k'<k} x[i,k']·w[k',0:n] for i < m, strides in elements.
func axpyPanelGeneric(y []float32, ldy int, x []float32, ldx int, w []float32, ldw int, n, m, k int) {
	for i := 0; i < m; i++ {
		yi := y[i*ldy : i*ldy+n]
		for kk := 0; kk < k; kk++ {
			a := x[i*ldx+kk]
			wk := w[kk*ldw : kk*ldw+n]
			for j := range yi {
				yi[j] += a * wk[j]
			}
		}
	}
}

// axpyPanelWidened is axpyPanel on float16 weights, widened into float32
// scratch first: the pure-Go build's axpyPanel16, and the edges of the
// assembly one, which then give the float32 kernels' bits.
func axpyPanelWidened(y []float32, ldy int, x []float32, ldx int, w []uint16, ldw int, n, m, k int) {
	if n == 0 || m == 0 || k == 0 {
		return
	}
	buf := getScratch(k * n)
	defer scratch.Put(buf)
	widenBlock(*buf, w, ldw, k, n)
	axpyPanel(y, ldy, x, ldx, *buf, n, n, m, k)
}

// dotPanelWidened is dotPanel on 4 float16 weight rows, widened first.
func dotPanelWidened(h []float32, ldh, m int, w []uint16, ldw, n int, out []float32, ldo int) {
	buf := getScratch(4 * n)
	defer scratch.Put(buf)
	widenBlock(*buf, w, ldw, 4, n)
	dotPanel(h, ldh, m, *buf, n, n, out, ldo)
}

// dotPanelGeneric is the reference semantics of dotPanel:
// out[i*ldo+r] = h[i,0:n]·w[r*ldw:r*ldw+n] for r < 4, i < m.
func dotPanelGeneric(h []float32, ldh, m int, w []float32, ldw, n int, out []float32, ldo int) {
	for i := 0; i < m; i++ {
		hi := h[i*ldh : i*ldh+n]
		for r := 0; r < 4; r++ {
			out[i*ldo+r] = dotGeneric(hi, w[r*ldw:r*ldw+n])
		}
	}
}

func dotGeneric(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}
