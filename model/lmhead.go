package model

import (
	"runtime"
	"sync"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// lmHead computes logits[R,V] = x[R,C]·wteᵀ, reading the tied embedding in
// place (Trans) rather than keeping a transposed copy. Vocabulary chunks run
// on separate goroutines: V is the large dimension, and for decode (R = 1)
// the work is a bandwidth-bound GEMV that gonum would not split.
func (m *Model) lmHead(logits, x []float32, R int) {
	C, V := m.Config.NEmbd, m.Config.VocabSize
	workers := runtime.GOMAXPROCS(0)
	if R*V*C < parallelMinWork {
		workers = 1
	}
	chunk := (V + workers - 1) / workers
	chunk = (chunk + 63) &^ 63 // whole cache lines of logits per worker
	a := blas32.General{Rows: R, Cols: C, Stride: C, Data: x}
	var wg sync.WaitGroup
	for v0 := 0; v0 < V; v0 += chunk {
		n := min(chunk, V-v0)
		wg.Add(1)
		go func() {
			defer wg.Done()
			blas32.Gemm(blas.NoTrans, blas.Trans, 1, a,
				blas32.General{Rows: n, Cols: C, Stride: C, Data: m.wte[v0*C : (v0+n)*C]},
				0, blas32.General{Rows: R, Cols: n, Stride: V, Data: logits[v0:]})
		}()
	}
	wg.Wait()
}
