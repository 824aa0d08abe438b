package kernels

// Product is one x[M,K]·w[K,N] of a batch (MatMulBatch): Dst [M,N] is set
// to it.
type Product struct {
	Dst, X  []float32
	W       Matrix
	M, K, N int
}

// MatMulBatch sets each product's Dst to X·W with MatMulBias's bits (a nil
// bias), sharing every product's column chunks out over the cores in one
// call. A mixture of experts' prefill is some hundred products of a few
// rows each; one ParallelFor apiece cost a dispatch and left the other
// core idle through the gathers between them (notes 45). Products with
// the same X (the slice, M and K) and quantised matrices cut alike share
// the limb records of X's rows, split once: an expert's gate and up.
func MatMulBatch(ps []Product) {
	type split struct {
		x    []float32
		M, K int
		min  int8
		size int
		at   int // offset of its records in rec
		row0 int // its first row in the batch's split work
		per  int // bytes of a row's records
	}
	var splits []split
	recOf := make([]int, len(ps)) // the split of each quantised product
	total, rows, work := 0, 0, 0
	for i, p := range ps {
		checkShape(p.W, p.K, p.N)
		recOf[i] = -1
		q := p.W.q
		if q == nil || p.M == 0 {
			continue
		}
		for k := range splits {
			s := &splits[k]
			if s.M == p.M && s.K == p.K && s.min == q.min && s.size == q.g.Size && &s.x[0] == &p.X[0] {
				recOf[i] = k
				break
			}
		}
		if recOf[i] < 0 {
			per := p.K / limbRows * limbRecord
			recOf[i] = len(splits)
			splits = append(splits, split{x: p.X, M: p.M, K: p.K, min: q.min, size: q.g.Size, at: total, row0: rows, per: per})
			total += p.M * per
			rows += p.M
			work += p.M * p.K
		}
	}
	rp := recScratch.Get(total)
	defer recScratch.Put(rp)
	rec := *rp
	// Every split's rows, one ParallelRange: row r of the batch is row
	// r−row0 of the split it falls in.
	splitRows := func(r0, r1 int) {
		k := 0
		for r := r0; r < r1; r++ {
			for splits[k].row0+splits[k].M <= r {
				k++
			}
			s, i := &splits[k], r-splits[k].row0
			splitLimbs(rec[s.at+i*s.per:s.at+(i+1)*s.per], s.x[i*s.K:(i+1)*s.K], s.min, s.size)
		}
	}
	if work < ParallelMinWork/4 {
		splitRows(0, rows)
	} else {
		ParallelRange(rows, 8, splitRows)
	}

	// The column chunks of every product, as matmul shares one product's.
	type task struct{ p, j0, j1 int }
	var tasks []task
	for i, p := range ps {
		if p.M == 0 || p.N == 0 {
			continue
		}
		chunk := colChunk
		if p.W.q == nil && p.W.isHalf() {
			chunk *= 2
		}
		if p.M*p.K*p.N < ParallelMinWork {
			chunk = p.N
		}
		for j0 := 0; j0 < p.N; j0 += chunk {
			tasks = append(tasks, task{i, j0, min(j0+chunk, p.N)})
		}
	}
	ParallelFor(len(tasks), func(t int) {
		tk := tasks[t]
		p := ps[tk.p]
		start{zero: true}.set(p.Dst, p.M, p.N, tk.j0, tk.j1)
		if k := recOf[tk.p]; k >= 0 {
			s := &splits[k]
			p.W.q.limbCols(p.Dst, rec[s.at:s.at+p.M*s.per], p.M, p.N, tk.j0, tk.j1)
			return
		}
		matmulCols(p.Dst, p.X, p.W, p.M, p.K, p.N, tk.j0, tk.j1)
	})
}
