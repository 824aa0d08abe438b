package model

import (
	"math"

	"github.com/llorch/llorch-check/kernels"
)

// layerNormChunk is the rows a goroutine normalises at a time: a prefill's
// 128 rows were 8% of its time on one core.
const layerNormChunk = 16

// layerNorm normalises each C-wide row of x into dst with biased variance.
// Mean and variance accumulate in float64 so that a row with a large common
// offset does not lose the small deviations that carry the signal.
func layerNorm(dst, x, w, b []float32, C int, eps float64) {
	byRowChunks(len(x), C, func(lo, hi int) { layerNormRows(dst[lo:hi], x[lo:hi], w, b, C, eps) })
}

// byRowChunks runs fn over the n values of C-wide rows, elements lo..hi a
// call, in chunks of layerNormChunk rows shared over the cores when there
// is more than one.
func byRowChunks(n, C int, fn func(lo, hi int)) {
	rows := n / C
	if rows <= layerNormChunk {
		fn(0, n)
		return
	}
	kernels.ParallelRange(rows, layerNormChunk, func(lo, hi int) { fn(lo*C, hi*C) })
}

// layerNormRows is layerNorm on one goroutine, four rows at a time where
// there are four: a row's float64 sums are one chain of dependent adds,
// four cycles each, so a row alone kept the core a quarter busy; four
// rows' chains side by side run in the time of one, each row's operations
// in its own order (the same bits).
func layerNormRows(dst, x, w, b []float32, C int, eps float64) {
	r := 0
	for ; r+4*C <= len(x); r += 4 * C {
		x0, x1, x2, x3 := x[r:r+C], x[r+C:r+2*C], x[r+2*C:r+3*C], x[r+3*C:r+4*C]
		var s0, s1, s2, s3 float64
		for i := range C {
			s0 += float64(x0[i])
			s1 += float64(x1[i])
			s2 += float64(x2[i])
			s3 += float64(x3[i])
		}
		m0, m1, m2, m3 := s0/float64(C), s1/float64(C), s2/float64(C), s3/float64(C)
		var q0, q1, q2, q3 float64
		for i := range C {
			d0 := float64(x0[i]) - m0
			q0 += d0 * d0
			d1 := float64(x1[i]) - m1
			q1 += d1 * d1
			d2 := float64(x2[i]) - m2
			q2 += d2 * d2
			d3 := float64(x3[i]) - m3
			q3 += d3 * d3
		}
		for j, rs := range [4]struct {
			mean, ss float64
			row      []float32
		}{{m0, q0, x0}, {m1, q1, x1}, {m2, q2, x2}, {m3, q3, x3}} {
			normalise(dst[r+j*C:r+(j+1)*C], rs.row, w, b, rs.mean, rs.ss, eps)
		}
	}
	for ; r+C <= len(x); r += C {
		row := x[r : r+C]
		var sum float64
		for _, v := range row {
			sum += float64(v)
		}
		mean := sum / float64(C)
		var ss float64
		for _, v := range row {
			d := float64(v) - mean
			ss += d * d
		}
		normalise(dst[r:r+C], row, w, b, mean, ss, eps)
	}
}

// normalise writes one row's (v - mean)/√(variance + eps)·w + b, its
// variance ss over the row's length.
func normalise(out, row, w, b []float32, mean, ss, eps float64) {
	inv := 1 / math.Sqrt(ss/float64(len(row))+eps)
	for i, v := range row {
		out[i] = float32((float64(v)-mean)*inv*float64(w[i]) + float64(b[i]))
	}
}
