package model

import "github.com/llorch/llorch-check/kernels"

// lmHead computes logits[R,V] = x[R,C]·headᵀ (the tied wte, or the
// file's own output.weight), reading it in place.
func (m *Model) lmHead(logits, x []float32, R int) {
	kernels.MatMulT(logits, x, m.head(), R, m.Config.NEmbd, m.Config.VocabSize)
}
