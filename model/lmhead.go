package model

// lmHead computes logits[R,V] = x[R,C]·headᵀ (the tied wte, or the
// file's own output.weight), reading it in place rather than keeping a
// transposed copy: each logit is a dot product of a contiguous row with x. Vocabulary chunks run on separate
// goroutines; for decode the work is a bandwidth-bound GEMV, and with R
// rows each block of 4 wte rows is read from memory once and reused from
// L1 for every row.
func (m *Model) lmHead(logits, x []float32, R int) {
	C, V, w := m.Config.NEmbd, m.Config.VocabSize, m.head()
	if R*V*C < parallelMinWork {
		lmHeadRows(logits, x, w, R, C, V, 0, V)
		return
	}
	const chunk = 1024 // vocabulary rows per unit of work (3 MiB of wte for GPT-2)
	parallelFor((V+chunk-1)/chunk, func(c int) {
		lmHeadRows(logits, x, w, R, C, V, c*chunk, min((c+1)*chunk, V))
	})
}

// lmHeadRows fills logits[:, v0:v1]. Float16 rows go to dotPanel's
// float16 twin, which gives the same bits as float32 rows of the same
// values.
func lmHeadRows(logits, x []float32, wte matrix, R, C, V, v0, v1 int) {
	if wte.f16 == nil {
		lmHeadRows32(logits, x, wte.f32, R, C, V, v0, v1)
		return
	}
	v := v0
	for ; v+4 <= v1; v += 4 {
		dotPanel16(x, C, R, wte.f16[v*C:], C, C, logits[v:], V)
	}
	if v < v1 {
		buf := getScratch((v1 - v) * C)
		defer scratch.Put(buf)
		widenBlock(*buf, wte.f16[v*C:], C, v1-v, C)
		lmHeadRows32(logits[v:], x, *buf, R, C, V, 0, v1-v)
	}
}

// lmHeadRows32 fills logits[:, v0:v1] from float32 rows wte[v0:v1].
func lmHeadRows32(logits, x, wte []float32, R, C, V, v0, v1 int) {
	v := v0
	for ; v+4 <= v1; v += 4 {
		dotPanel(x, C, R, wte[v*C:], C, C, logits[v:], V)
	}
	for ; v < v1; v++ {
		for i := 0; i < R; i++ {
			logits[i*V+v] = dotGeneric(x[i*C:(i+1)*C], wte[v*C:(v+1)*C])
		}
	}
}
