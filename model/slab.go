package model

import (
	"fmt"

	"github.com/llorch/llorch-check/kernels"
)

// slabHead holds the LM head (the token embedding, or the file's own
// output.weight) as the slabs of its transpose (kernels.SlabbedT), so that
// it streams at the slab kernels' rate: float16 rows of 896 (Qwen2.5-0.5B)
// streamed at 8-10 GB/s through the dot-product kernel, 14-27 as slabs.
// Its products then have the slab kernels' bits, so every loader ends
// with it, and a model's logits do not depend on the path that loaded it.
func (m *Model) slabHead() error {
	V, C := m.Config.VocabSize, m.Config.NEmbd
	for _, w := range []*kernels.Matrix{&m.wte, &m.lmW} {
		if w.Len() == 0 {
			continue
		}
		s, err := kernels.SlabbedT(*w, V, C)
		if err != nil {
			return fmt.Errorf("LM head: %w", err)
		}
		*w = s
	}
	return nil
}

// SlabBlocks puts the blocks' float matrices in the layout the decode
// kernels stream fastest (kernels.Slabbed); the same bits come out. A
// loader calls it once every tensor is placed (a weights cache's are
// already so).
func (m *Model) SlabBlocks() error {
	shapes := m.Config.matrixShapes()
	for l := range m.h {
		for i, w := range m.h[l].matrices() {
			if w.Len() == 0 {
				continue // held as column blocks (block.attnParts), each already slabbed
			}
			s, err := kernels.Slabbed(*w, shapes[i][0], shapes[i][1])
			if err != nil {
				return fmt.Errorf("layer %d: %w", l, err)
			}
			*w = s
		}
	}
	return nil
}
