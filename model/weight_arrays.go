package model

import (
	"fmt"

	"github.com/llorch/llorch-check/kernels"
)

// WeightArray is one array of weights the model holds: a float32 vector
// (Vec) or a matrix in the kernels' layout (Mat), the other nil. A
// weights cache (package loader) writes what it points at and restores
// into it, so that a model's weights are mapped, not re-laid, on the
// next load.
type WeightArray struct {
	Vec *[]float32
	Mat *kernels.Matrix
}

// WeightArrays lists every array of weights the model holds, in a fixed
// order (a weights cache's). A block's fused matrix held as column blocks
// (Holding.AttnParts, FcParts) lists each block, a sparse layer its
// router and then each expert's gate, up and down; set the Holding first
// on a model to restore.
func (m *Model) WeightArrays() []WeightArray {
	vec := func(v *[]float32) WeightArray { return WeightArray{Vec: v} }
	mat := func(w *kernels.Matrix) WeightArray { return WeightArray{Mat: w} }
	s := []WeightArray{mat(&m.wte), mat(&m.lmW), vec(&m.wpe), vec(&m.lnfW), vec(&m.lnfB), vec(&m.rope.invFreq), vec(&m.local.invFreq)}
	for i := range m.h {
		b := &m.h[i]
		for _, v := range b.vectors() {
			s = append(s, vec(v))
		}
		for _, w := range b.matrices() {
			s = append(s, mat(w))
		}
		for j := range b.attnParts {
			s = append(s, mat(&b.attnParts[j].w))
		}
		for j := range b.fcParts {
			s = append(s, mat(&b.fcParts[j].w))
		}
		if b.moe != nil {
			s = append(s, mat(&b.moe.router))
			for e := range b.moe.experts {
				x := &b.moe.experts[e]
				s = append(s, mat(&x.gate), mat(&x.up), mat(&x.down))
			}
		}
	}
	return s
}

// Holding is how the model holds its weights beside their arrays: whether
// a float16 matrix was rounded from another type, and per block the
// widths of the column blocks its fused matrices are held as (none when
// held whole). A weights cache records it to restore the arrays.
type Holding struct {
	RoundedToF16       bool
	AttnParts, FcParts [][]int
}

// Holding is the model's.
func (m *Model) Holding() Holding {
	h := Holding{RoundedToF16: m.roundedToF16}
	for _, b := range m.h {
		h.AttnParts, h.FcParts = append(h.AttnParts, partWidths(b.attnParts)), append(h.FcParts, partWidths(b.fcParts))
	}
	return h
}

// SetHolding gives a model without weights (NewModel) the holding h, and
// each sparse layer (Config.Sparse) its router's and experts' places, so
// that WeightArrays lists the arrays to restore.
func (m *Model) SetHolding(h Holding) error {
	if len(h.AttnParts) != len(m.h) || len(h.FcParts) != len(m.h) {
		return fmt.Errorf("parts of %d and %d blocks, the model has %d", len(h.AttnParts), len(h.FcParts), len(m.h))
	}
	m.roundedToF16 = h.RoundedToF16
	for i := range m.h {
		b := &m.h[i]
		b.attnParts, b.fcParts = partsOf(h.AttnParts[i]), partsOf(h.FcParts[i])
		b.moe = nil
		if m.Config.Sparse(i) {
			b.moe = &moeBlock{experts: make([]expert, m.Config.MoE.Experts)}
		}
	}
	return nil
}

func partWidths(parts []colBlock) []int {
	n := make([]int, len(parts))
	for i, p := range parts {
		n[i] = p.n
	}
	return n
}

func partsOf(widths []int) []colBlock {
	if len(widths) == 0 {
		return nil
	}
	parts := make([]colBlock, len(widths))
	for i, n := range widths {
		parts[i].n = n
	}
	return parts
}
