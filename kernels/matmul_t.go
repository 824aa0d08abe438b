package kernels

import "fmt"

// MatMulT computes dst[R,N] = x[R,K]·wᵀ for w [N,K], as the LM head
// reads the token embedding. Held as the slabs of its transpose
// (SlabbedT, as the model holds its LM head) or quantised, w goes through
// MatMulAcc's kernels. Row-major, each output is a dot product of a
// contiguous row of w with a row of x, so no transposed copy is kept:
// chunks of N run on separate goroutines, and with R rows each block of 4
// rows of w is read from memory once and reused from L1 for every row of
// x (for decode, rows of 1-2 KB stream at half the slab kernels' rate).
func MatMulT(dst, x []float32, w Matrix, R, K, N int) {
	if w.q != nil {
		matmulTQuant(dst, x, w.q, R, K, N)
		return
	}
	if w.s != nil && w.t { // x·wᵀ, the slabs' own product
		if w.s.k != K || w.s.n != N {
			panic(fmt.Sprintf("kernels: MatMulT of a %dx%d matrix held transposed as %dx%d", w.s.n, w.s.k, N, K))
		}
		matmul(dst, x, Matrix{s: w.s}, R, K, N, start{zero: true})
		return
	}
	if w.s != nil {
		panic("kernels: MatMulT of a slabbed matrix; slab only what MatMulAcc reads")
	}
	if R*N*K < ParallelMinWork {
		matmulTRows(dst, x, w, R, K, N, 0, N)
		return
	}
	const chunk = 1024 // rows of w per unit of work (3 MiB of GPT-2's wte)
	ParallelRange(N, chunk, func(n0, n1 int) { matmulTRows(dst, x, w, R, K, N, n0, n1) })
}

// matmulTRows fills dst[:, n0:n1]. 16-bit float rows go to dotPanel's
// twins, which give the same bits as float32 rows of the same values.
func matmulTRows(dst, x []float32, w Matrix, R, K, N, n0, n1 int) {
	if w.h16 == nil {
		matmulTRows32(dst, x, w.f32, R, K, N, n0, n1)
		return
	}
	n := n0
	for ; n+4 <= n1; n += 4 {
		dotPanel16(w.form, x, K, R, w.h16[n*K:], K, K, dst[n:], N)
	}
	if n < n1 {
		buf := getScratch((n1 - n) * K)
		defer scratch.Put(buf)
		w.form.widen(*buf, w.h16[n*K:], K, n1-n, K)
		matmulTRows32(dst[n:], x, *buf, R, K, N, 0, n1-n)
	}
}

// matmulTRows32 fills dst[:, n0:n1] from float32 rows w[n0:n1].
func matmulTRows32(dst, x, w []float32, R, K, N, n0, n1 int) {
	n := n0
	for ; n+4 <= n1; n += 4 {
		dotPanel(x, K, R, w[n*K:], K, K, dst[n:], N)
	}
	for ; n < n1; n++ {
		for i := 0; i < R; i++ {
			dst[i*N+n] = dotGeneric(x[i*K:(i+1)*K], w[n*K:(n+1)*K])
		}
	}
}

// matmulTQuant is MatMulT on a quantised matrix, which is stored as its
// transpose [K][N]: x·(that storage), through MatMulAcc's kernels. The
// matrix goes to them as it is: only MatMulAcc's shape check reads the
// transposed flag, and a copy with it cleared was a heap allocation a
// call (the LM head's, every step).
func matmulTQuant(dst, x []float32, w *quant, R, K, N int) {
	if !w.transposed || w.k != K || w.n != N {
		panic(fmt.Sprintf("kernels: MatMulT of a %dx%d quantised matrix (transposed %t) as %dx%d", w.n, w.k, w.transposed, N, K))
	}
	matmul(dst, x, Matrix{q: w}, R, K, N, start{zero: true})
}
