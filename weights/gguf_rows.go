package weights

import (
	"fmt"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/internal/pages"
	"github.com/llorch/llorch-check/kernels"
)

// Part is a GGUF tensor read as rows of a matrix (or a vector, one column
// a row): the whole matrix, or one of the parts stacked into it.
type Part struct {
	Info gguf.TensorInfo
	Raw  []byte // the tensor's data
	Rows int
	// RopeHeads, if not 0, says the file holds the rows in llama.cpp's
	// order for its rope over this many heads (RopeRow), not HF's.
	RopeHeads int
}

// Float32s decodes the part to float32, its rows in HF's order.
func (p Part) Float32s() ([]float32, error) {
	vals := pages.Make[float32](int(p.Info.Elements()))
	if err := gguf.DecodeFloat32(p.Info.Type, p.Raw, vals); err != nil {
		return nil, fmt.Errorf("tensor %q: %w", p.Info.Name, err)
	}
	if p.RopeHeads == 0 {
		return vals, nil
	}
	return unrope(p, vals), nil
}

// Float16s is an F16 part's float16 bits in HF's row order, without
// passing through float32. Unpermuted, it is the file's pages themselves
// where Float16View can give them: copy it (or place it where it is
// copied) before releasing them.
func (p Part) Float16s() ([]uint16, error) {
	bits, err := Float16View(p.Raw, int(p.Info.Elements()))
	if err != nil {
		return nil, fmt.Errorf("tensor %q: %w", p.Info.Name, err)
	}
	if p.RopeHeads == 0 {
		return bits, nil
	}
	return unrope(p, bits), nil
}

// unrope is vals (p's rows, the file's order) in HF's row order: llama.cpp's
// converter permutes q and k for its rope.
func unrope[T float32 | uint16](p Part, vals []T) []T {
	return PermuteRows(vals, p.Rows, len(vals)/p.Rows, func(r int) int { return r }, func(r int) int { return RopeRow(r, p.Rows, p.RopeHeads) })
}

// releaseRows is how many rows Quantized decodes between two releases.
const releaseRows = 256

// Quantized builds one quantised matrix of cols columns from the parts'
// rows stacked in order, each part's rows in HF's order, all parts of one
// quantised type; transposed as kernels.Quantized says. Each part's pages
// are released (if release is not nil) as its rows are read: a growing
// prefix every releaseRows rows when they are read in file order, the
// whole part at its end when permuted. All rows so far, not just the last
// ones: a page fault maps the page cache's neighbours too (fault-around,
// 64 KB), and so put back released pages just behind; a Q6_K
// output.weight had 18 MB resident that way.
func Quantized(parts []Part, cols int, transposed bool, release func([]byte)) (kernels.Matrix, error) {
	typ := parts[0].Info.Type
	g, _ := gguf.GroupsOf(typ)
	starts := make([]int, len(parts)+1)
	for i, p := range parts {
		starts[i+1] = starts[i] + p.Rows
	}
	w, err := kernels.Quantized(starts[len(parts)], cols, g, transposed, func(r int, q []int8, f gguf.Factors) error {
		i := runOf(starts, r)
		p, local := parts[i], r-starts[i]
		rowBytes := len(p.Raw) / p.Rows
		fr := RopeRow(local, p.Rows, p.RopeHeads)
		if err := gguf.DecodeFactors(typ, p.Raw[fr*rowBytes:(fr+1)*rowBytes], q, f); err != nil {
			return fmt.Errorf("tensor %q: %w", p.Info.Name, err)
		}
		if release != nil && (local+1 == p.Rows || (p.RopeHeads == 0 && (local+1)%releaseRows == 0)) {
			release(p.Raw[:(local+1)*rowBytes])
		}
		return nil
	})
	if err != nil {
		return kernels.Matrix{}, fmt.Errorf("tensor %q: %w", parts[0].Info.Name, err)
	}
	return w, nil
}

// runOf is the index of the run [starts[i], starts[i+1]) holding r.
func runOf(starts []int, r int) int {
	i := 0
	for r >= starts[i+1] {
		i++
	}
	return i
}

// RopeRow is the row of llama.cpp's permuted q or k (or bias) that holds
// HF's row r, for a tensor of rows rows and heads heads (0: unpermuted).
// The converter's w.reshape(heads, 2, rows/heads/2, cols).swapaxes(1, 2)
// puts HF's row h·per + j·per/2 + i at h·per + 2i + j: the two halves HF's
// rotate_half pairs become adjacent rows.
func RopeRow(r, rows, heads int) int {
	if heads == 0 {
		return r
	}
	per := rows / heads
	h, x := r/per, r%per
	j, i := x/(per/2), x%(per/2)
	return h*per + 2*i + j
}

// PermuteRows returns a copy of a [rows,cols] tensor with its rows
// permuted: out[to(r)] = in[from(r)].
func PermuteRows[T float32 | uint16](vals []T, rows, cols int, to, from func(int) int) []T {
	out := make([]T, len(vals))
	for r := range rows {
		copy(out[to(r)*cols:(to(r)+1)*cols], vals[from(r)*cols:(from(r)+1)*cols])
	}
	return out
}
