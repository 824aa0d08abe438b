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

// ScoresRows is Scores for T = len(n) queries at once: query t, at
// q[t*ldq:], against the first n[t] keys, its scores at dst[t*lds:]. n
// is nondecreasing, as a causal mask's counts are (a count at or below
// zero scores nothing). Each score gets Scores's bits: a 4-key group is
// one panel call for every query that sees all four, each query's last
// n[t]%4 keys are scored one by one. A prefill's queries share the
// panel's key loads and calls instead of paying them query by query.
func ScoresRows(dst []float32, lds int, q []float32, ldq int, k []float32, D int, n []int) {
	fourKeyGroups(n, func(s, t0, g int) {
		dotPanels(q[t0*ldq:], ldq, len(n)-t0, k[s*D:], D, D, dst[t0*lds+s:], lds, g)
	})
	for t, nt := range n {
		for s := max(nt&^3, 0); s < nt; s++ {
			dst[t*lds+s] = dotGeneric(q[t*ldq:t*ldq+D], k[s*D:(s+1)*D])
		}
	}
}

// AddWeightedSumRows is AddWeightedSum for T = len(n) queries at once:
// out[t*ldo:] += Σ_{s<n[t]} p[t*ldp+s]·v[s*D:(s+1)*D], n nondecreasing.
// Each row's values are added as AddWeightedSum adds them, 4-key group
// after group in key order and then its last n[t]%4, so each row gets
// its bits.
func AddWeightedSumRows(out []float32, ldo int, p []float32, ldp int, v []float32, D int, n []int) {
	fourKeyGroups(n, func(s, t0, g int) {
		axpyPanel(out[t0*ldo:], ldo, p[t0*ldp+s:], ldp, v[s*D:], D, D, len(n)-t0, 4*g)
	})
	for t, nt := range n {
		if r := nt & 3; nt > 0 && r > 0 {
			axpyPanel(out[t*ldo:], ldo, p[t*ldp+nt-r:], ldp, v[(nt-r)*D:], D, D, 1, r)
		}
	}
}

// fourKeyGroups calls f(s, t0, g) for each run of g groups of 4 keys,
// s..s+4g−1 (s a multiple of 4), that the last query sees and whose first
// query to see all of a group is the same, t0: the queries t0.. of
// nondecreasing counts n see every group of the run. A decode step's
// keys are one run, as is a block every query sees whole.
func fourKeyGroups(n []int, f func(s, t0, g int)) {
	if len(n) == 0 {
		return
	}
	t0, s0 := 0, 0
	for s := 0; s+4 <= n[len(n)-1]; s += 4 {
		t := t0
		for n[t] < s+4 {
			t++
		}
		if t != t0 {
			if s > s0 {
				f(s0, t0, (s-s0)/4)
			}
			t0, s0 = t, s
		}
	}
	if last := n[len(n)-1] &^ 3; last > s0 {
		f(s0, t0, (last-s0)/4)
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
