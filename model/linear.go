package model

import (
	"github.com/llorch/llorch-check/kernels"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// conv1D computes dst[T,out] = x[T,in]·W[in,out] + bias, HF's Conv1D with
// its weight in stored [in,out] layout; a nil bias adds nothing (the Llama
// family's bias-free Linear layers). transW applies Wᵀ instead (only for
// FaultTransposedProj, where W is square; gonum serves that path, on a
// float32 copy of float16 weights, as speed does not matter there).
func conv1D(dst, x []float32, w kernels.Matrix, bias []float32, T, in, out int, transW bool) {
	if !transW {
		kernels.MatMulBias(dst, x, w, bias, T, in, out)
		return
	}
	if bias == nil {
		clear(dst[:T*out])
	}
	for r := 0; bias != nil && r < T; r++ {
		copy(dst[r*out:(r+1)*out], bias)
	}
	blas32.Gemm(blas.NoTrans, blas.Trans, 1,
		blas32.General{Rows: T, Cols: in, Stride: in, Data: x},
		blas32.General{Rows: in, Cols: out, Stride: out, Data: w.Float32s()},
		1,
		blas32.General{Rows: T, Cols: out, Stride: out, Data: dst})
}

// linear is conv1D of a matrix held whole (w) or, when parts is not empty,
// as column blocks: each block's product, started from its columns of the
// bias as conv1D starts from the bias, goes into its columns of dst
// [T,out], so the bits are those of the whole matrix.
func linear(dst, x []float32, w kernels.Matrix, parts []colBlock, bias []float32, T, in, out int) {
	if len(parts) == 0 {
		conv1D(dst, x, w, bias, T, in, out, false)
		return
	}
	off := 0
	for _, p := range parts {
		buf := partBuffers.Get(T * p.n)
		var b []float32
		if bias != nil {
			b = bias[off : off+p.n]
		}
		conv1D(*buf, x, p.w, b, T, in, p.n, false)
		for r := range T {
			copy(dst[r*out+off:r*out+off+p.n], (*buf)[r*p.n:(r+1)*p.n])
		}
		partBuffers.Put(buf)
		off += p.n
	}
}
