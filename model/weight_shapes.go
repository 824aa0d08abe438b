package model

import (
	"errors"
	"fmt"
	"slices"
)

// CheckShapes refuses a restored model whose arrays are not the shapes
// its configuration gives: a cache's own consistency says nothing of
// what the forward pass will index.
func (m *Model) CheckShapes() error {
	c := m.Config
	C, D := c.NEmbd, c.HeadDim()
	if !m.wte.Is(c.VocabSize, C) || m.lmW.Len() != 0 && !m.lmW.Is(c.VocabSize, C) {
		return errors.New("the token embedding or the LM head is not [vocab, hidden]")
	}
	wantPos := c.family().positionRows(c) * C
	vecs := []struct {
		v    []float32
		want []int
	}{{m.wpe, []int{wantPos}}, {m.lnfW, []int{C}}, {m.lnfB, []int{0, C}}, {m.rope.invFreq, []int{0, c.RotaryDim / 2}}, {m.local.invFreq, []int{0, c.RotaryDim / 2}}}
	shapes := c.matrixShapes()
	for l := range m.h {
		b := &m.h[l]
		W, F := shapes[0][1], shapes[2][1]
		for i, want := range [][]int{{C}, {0, C}, {0, W}, {0, D}, {0, D}, {0, C}, {C}, {0, C}, {0, F}, {0, C}, {0, C}, {0, C}} {
			vecs = append(vecs, struct {
				v    []float32
				want []int
			}{*b.vectors()[i], want})
		}
		for i, w := range b.matrices() {
			K, N := shapes[i][0], shapes[i][1]
			var parts []colBlock
			switch i {
			case 0:
				parts = b.attnParts
			case 2:
				parts = b.fcParts
			}
			if c.Sparse(l) && (i == 2 || i == 3) {
				// The experts stand in for the dense FFN's matrices.
				if w.Len() != 0 || len(parts) != 0 {
					return fmt.Errorf("layer %d: a sparse layer holds a dense matrix %d", l, i)
				}
				continue
			}
			if w.Len() != 0 {
				if !w.Is(K, N) || len(parts) != 0 {
					return fmt.Errorf("layer %d: matrix %d is not [%d, %d]", l, i, K, N)
				}
				continue
			}
			n := 0
			for _, p := range parts {
				if p.n <= 0 || !p.w.Is(K, p.n) {
					return fmt.Errorf("layer %d: a column block of matrix %d is not [%d, %d]", l, i, K, p.n)
				}
				n += p.n
			}
			if n != N {
				return fmt.Errorf("layer %d: matrix %d's column blocks are %d wide, not %d", l, i, n, N)
			}
		}
		if err := b.checkExperts(c, l); err != nil {
			return err
		}
	}
	for i, v := range vecs {
		if !slices.Contains(v.want, len(v.v)) {
			return fmt.Errorf("weight vector %d holds %d values, not %v", i, len(v.v), v.want)
		}
	}
	return nil
}

// checkExperts refuses layer l's router and experts unless the layer is
// sparse and they are [C,E] and each expert's gate and up [C,I], down
// [I,C], as moeBlock holds them; a dense layer must have none.
func (b *block) checkExperts(c Config, l int) error {
	if !c.Sparse(l) {
		if b.moe != nil {
			return fmt.Errorf("layer %d: a dense layer holds experts", l)
		}
		return nil
	}
	if b.moe == nil || len(b.moe.experts) != c.MoE.Experts {
		return fmt.Errorf("layer %d: a sparse layer without its %d experts", l, c.MoE.Experts)
	}
	C, E, I := c.NEmbd, c.MoE.Experts, c.MoE.Inner
	if !b.moe.router.Is(C, E) {
		return fmt.Errorf("layer %d: the router is not [%d, %d]", l, C, E)
	}
	for e, x := range b.moe.experts {
		if !x.gate.Is(C, I) || !x.up.Is(C, I) || !x.down.Is(I, C) {
			return fmt.Errorf("layer %d: expert %d is not gate and up [%d, %d], down [%d, %d]", l, e, C, I, I, C)
		}
	}
	return nil
}
