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
func matmulAcc(dst, x, w []float32, M, K, N int) {
	if M*K*N < parallelMinWork {
		matmulCols(dst, x, w, M, K, N, 0, N)
		return
	}
	chunks := (N + colChunk - 1) / colChunk
	parallelFor(chunks, func(c int) {
		matmulCols(dst, x, w, M, K, N, c*colChunk, min((c+1)*colChunk, N))
	})
}

// colChunk is the unit of work of matmulAcc: small enough that GPT-2's
// narrowest matrix (768 columns) gives every worker several, large enough
// (512 B per weight row) to stream well.
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

// matmulCols is matmulAcc restricted to columns j0..j1. Decode (M <= 3)
// uses the panel kernel, which streams each weight row segment once;
// larger M (batched decode, prefill) uses the register-blocked tile kernel
// on the largest 4-row × tile-width part and the panel kernel on the edges.
func matmulCols(dst, x, w []float32, M, K, N, j0, j1 int) {
	if M <= panelMaxRows || !hasTileKernel {
		for jt := j0; jt < j1; jt += nTile {
			n := min(nTile, j1-jt)
			for k0 := 0; k0 < K; k0 += kBlock {
				kk := min(kBlock, K-k0)
				for m0 := 0; m0 < M; m0 += mBlock {
					mm := min(mBlock, M-m0)
					axpyPanel(dst[m0*N+jt:], N, x[m0*K+k0:], K, w[k0*N+jt:], N, n, mm, kk)
				}
			}
		}
		return
	}
	tw := tileWidth()
	m4, n24 := M&^3, (j1-j0)/tw*tw
	for k0 := 0; k0 < K; k0 += kTile {
		kk := min(kTile, K-k0)
		gemmTiles(dst[j0:], N, x[k0:], K, w[k0*N+j0:], N, m4, n24, kk)
		if n24 < j1-j0 { // right edge, all rows
			axpyPanel(dst[j0+n24:], N, x[k0:], K, w[k0*N+j0+n24:], N, j1-j0-n24, M, kk)
		}
		if m4 < M { // bottom edge, tile columns
			axpyPanel(dst[m4*N+j0:], N, x[m4*K+k0:], K, w[k0*N+j0:], N, n24, M-m4, kk)
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
