package kernels

// Scores sets dst[s] = q·k[s*D:(s+1)*D] for s < n: one query against n
// keys stored row after row, four keys a kernel call. A key's score
// depends only on q, the key and n%4's split, so a position scores the
// same in a prefill as in a decode step, and keys held in blocks of a
// multiple of 4 positions score as they would held in one piece.
func Scores(dst, q, k []float32, D, n int) {
	n4 := n &^ 3
	for s := 0; s < n4; s += 4 {
		dotPanel(q, D, 1, k[s*D:], D, D, dst[s:], 4)
	}
	for s := n4; s < n; s++ {
		dst[s] = dotGeneric(q[:D], k[s*D:(s+1)*D])
	}
}

// WeightedSum sets out[0:D] = Σ_{s<n} p[s]·v[s*D:(s+1)*D], the
// probability-weighted values of one query, summed in key order.
func WeightedSum(out, p, v []float32, D, n int) {
	clear(out[:D])
	AddWeightedSum(out, p, v, D, n)
}

// AddWeightedSum adds Σ_{s<n} p[s]·v[s*D:(s+1)*D] to out[0:D], in key
// order, one key after another into out: values held in blocks of a
// multiple of 4 positions, summed block after block, give WeightedSum's
// bits over the whole.
func AddWeightedSum(out, p, v []float32, D, n int) {
	axpyPanel(out, D, p, n, v, D, D, 1, n)
}

// Widen sets dst[i] to the float16 src[i], exactly, for i < len(src).
func Widen(dst []float32, src []uint16) {
	widenBlock(dst, src, len(src), 1, len(src))
}
