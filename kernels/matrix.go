package kernels

import (
	"fmt"
	"math"

	"github.com/llorch/llorch-check/internal/ggmlnum"
	"github.com/llorch/llorch-check/internal/pages"
)

// Matrix is a row-major weight matrix held as float32, as IEEE binary16
// or bfloat16 bits, or quantised (Quantized). The kernels widen 16-bit
// floats and quantised blocks to float32 as they stream them, so
// arithmetic stays float32 while a decode step reads half or a quarter of
// the bytes. The zero Matrix is empty.
type Matrix struct {
	f32  []float32
	h16  []uint16 // 16-bit float bits, of format form
	form half
	q    *quant
	s    *slabs
	t    bool // s holds the transpose (SlabbedT)
}

// Quantized builds a matrix from a quantised tensor as a file stores it:
// rows rows of cols elements, each run of g.Size elements along a row
// sharing a scale (and an offset, if g.Offset), formed from factors as
// ggmlnum.Factors describes (gguf.Groups and gguf.Factors are these
// types). decodeRow fills row r's integers (cols) and
// factors (cols/g.Super block factors, cols/g.Size group factors), as
// gguf.DecodeFactors does. The kernels keep the transpose, [cols][rows],
// so that the reduction runs along the file's rows: transposed false makes
// the matrix that transpose (a GGUF [out][in] weight becomes HF Conv1D's
// [in,out], read by MatMulAcc), true keeps the file's own layout (the
// token embedding [V][C], read by MatMulT and Row).
func Quantized(rows, cols int, g ggmlnum.Groups, transposed bool, decodeRow func(r int, q []int8, f ggmlnum.Factors) error) (Matrix, error) {
	q, err := newQuant(rows, cols, g, transposed, decodeRow)
	if err != nil {
		return Matrix{}, err
	}
	return Matrix{q: q}, nil
}

// Slabbed returns the float32 or 16-bit float [K,N] matrix w in the slab
// layout MatMulAcc streams fastest at decode, taking over w's storage
// (w must not be used after). The bits of every product stay those of the
// row-major matrix. A quantised matrix is slabbed already and is returned
// as it is.
func Slabbed(w Matrix, K, N int) (Matrix, error) {
	if w.q != nil || w.s != nil {
		return w, nil
	}
	if w.Len() != K*N {
		return Matrix{}, fmt.Errorf("kernels: slabbing a %d-element matrix as %dx%d", w.Len(), K, N)
	}
	return Matrix{s: newSlabs(w.f32, w.h16, w.form, K, N)}, nil
}

// SlabbedT returns the float32 or 16-bit float [rows,cols] matrix w (a token
// embedding [V,C] that is also the LM head) held as the slabs of its
// transpose, taking over w's storage: one slab's 64 rows are contiguous,
// so each is transposed in place through a slab's scratch, and memory
// does not grow. MatMulT then runs MatMulAcc's slab kernels (x·wᵀ as a
// product with the [cols,rows] transpose), which stream contiguous memory
// where the dot-product kernels read four rows of 1-3 KB at a time and
// streamed float16 at half the rate; Row gathers a column. The products'
// bits are the slab kernels', not the dot-product kernels'. A quantised
// matrix, whose products are the same kernels' whichever way it is read,
// is returned as it is.
func SlabbedT(w Matrix, rows, cols int) (Matrix, error) {
	switch {
	case w.q != nil:
		return w, nil
	case w.s != nil:
		return Matrix{}, fmt.Errorf("kernels: SlabbedT of a slabbed matrix")
	case w.Len() != rows*cols:
		return Matrix{}, fmt.Errorf("kernels: SlabbedT of a %d-element matrix as %dx%d", w.Len(), rows, cols)
	}
	s := &slabs{f32: w.f32, h16: w.h16, form: w.form, k: cols, n: rows}
	if w.h16 != nil {
		transposeSlabs(s.h16, rows, cols)
	} else {
		transposeSlabs(s.f32, rows, cols)
	}
	return Matrix{s: s, t: true}, nil
}

// SlabbedRows returns the [cols,rows] transpose of the float32 or 16-bit
// float [rows,cols] matrix w, a weight as HF and GGUF store it ([out,in]), as
// the matrix MatMulAcc takes (K = cols, N = rows) in the slab layout,
// taking over w's storage: the slabs of wᵀ are w's own 64-row panels
// transposed, each in place (SlabbedT's storage, read the other way), so
// a float load moves each weight once where a whole-matrix transpose and
// then Slabbed moved it twice, the second by following the permutation's
// cycles through memory.
func SlabbedRows(w Matrix, rows, cols int) (Matrix, error) {
	if w.q != nil {
		return Matrix{}, fmt.Errorf("kernels: SlabbedRows of a quantised matrix")
	}
	t, err := SlabbedT(w, rows, cols)
	if err != nil {
		return Matrix{}, err
	}
	t.t = false
	return t, nil
}

// SlabbedRowsFrom is SlabbedRows of the 16-bit float [rows,cols] matrix
// whose row r is row(r) (cols bits; a file's mapped pages, or the parts
// of a fused matrix), bfloat16 if bf16 and float16 otherwise, in memory
// of its own: each 64-row panel is transposed straight from the rows
// into its slab, one pass over the weights where a copy and then
// SlabbedRows's in-place transpose (a panel out to scratch and back)
// made three. The slabs are SlabbedRows's, bit for bit.
func SlabbedRowsFrom(rows, cols int, bf16 bool, row func(r int) []uint16) Matrix {
	out := pages.Make[uint16](rows * cols)
	n := (rows + slab - 1) / slab
	per := (n + 7) / 8
	ParallelFor((n+per-1)/per, func(c int) {
		for j0 := c * per * slab; j0 < min((c+1)*per*slab, rows); j0 += slab {
			w := min(slab, rows-j0)
			panelOf(out[j0*cols:(j0+w)*cols], w, cols, func(r int) []uint16 { return row(j0 + r) })
		}
	})
	form := binary16
	if bf16 {
		form = bfloat16
	}
	return Matrix{s: &slabs{h16: out, form: form, k: cols, n: rows}}
}

// Float32 holds vals, not a copy.
func Float32(vals []float32) Matrix { return Matrix{f32: vals} }

// Float16 holds the binary16 bits, not a copy.
func Float16(bits []uint16) Matrix { return Matrix{h16: bits, form: binary16} }

// BFloat16 holds the bfloat16 bits (a float32's top half each), not a
// copy. Its products have the bits of a float32 matrix holding the same
// values, as a float16 matrix's do: bfloat16 widens exactly.
func BFloat16(bits []uint16) Matrix { return Matrix{h16: bits, form: bfloat16} }

// Len is the number of elements.
func (w Matrix) Len() int {
	switch {
	case w.q != nil:
		return w.q.k * w.q.n
	case w.s != nil:
		return w.s.k * w.s.n
	}
	return len(w.f32) + len(w.h16)
}

// Bytes is the memory the elements take.
func (w Matrix) Bytes() int64 {
	switch {
	case w.q != nil:
		return w.q.bytes()
	case w.s != nil:
		return w.s.bytes()
	}
	return int64(len(w.f32))*4 + int64(len(w.h16))*2
}

// Float16Bits returns the binary16 bits of a float16 matrix (row-major),
// nil otherwise.
func (w Matrix) Float16Bits() []uint16 { return w.halfBits(binary16) }

// BFloat16Bits returns the bits of a bfloat16 matrix (row-major), nil
// otherwise.
func (w Matrix) BFloat16Bits() []uint16 { return w.halfBits(bfloat16) }

// halfBits returns the bits of a 16-bit float matrix of format h
// (row-major), nil otherwise.
func (w Matrix) halfBits(h half) []uint16 {
	if w.s != nil {
		bits := w.s.halfBits(h)
		if w.t && bits != nil {
			return transposed(bits, w.s.k, w.s.n)
		}
		return bits
	}
	if w.form != h {
		return nil
	}
	return w.h16
}

// isHalf says the matrix holds 16-bit float bits, in either layout.
func (w Matrix) isHalf() bool { return w.h16 != nil || (w.s != nil && w.s.h16 != nil) }

// Float32s returns the values as float32: the slice itself, or a widened
// copy of the 16-bit float bits or quantised values.
func (w Matrix) Float32s() []float32 {
	if w.q != nil {
		return w.q.float32s()
	}
	if w.s != nil {
		if w.t {
			return transposed(w.s.float32s(), w.s.k, w.s.n)
		}
		return w.s.float32s()
	}
	if w.h16 == nil {
		return w.f32
	}
	out := make([]float32, len(w.h16))
	w.form.widen(out, w.h16, len(w.h16), 1, len(w.h16))
	return out
}

// Row returns row r of a [rows,cols] matrix: a slice of the float32
// values, or the 16-bit float row widened into dst[:cols].
func (w Matrix) Row(dst []float32, r, cols int) []float32 {
	switch {
	case w.q != nil:
		return w.q.row(dst, r, cols)
	case w.s != nil && w.t: // column r of the transpose
		dst = dst[:cols]
		w.s.gather(dst, 0, r, cols, 1)
		return dst
	case w.s != nil:
		dst = dst[:cols]
		w.s.gather(dst, r, 0, 1, cols)
		return dst
	case w.h16 == nil:
		return w.f32[r*cols : (r+1)*cols]
	}
	dst = dst[:cols]
	w.form.widen(dst, w.h16[r*cols:], cols, 1, cols)
	return dst
}

// ToFloat16 rounds vals to the nearest binary16, ties to even (as torch's
// .half() does).
func ToFloat16(vals []float32) ([]uint16, error) {
	out := make([]uint16, len(vals))
	return out, RoundFloat16(out, vals, 0)
}

// RoundFloat16 rounds vals into dst; vals[0] is element first of its
// tensor, for the error. A finite value beyond float16's range is an error
// rather than a silent infinity.
func RoundFloat16(dst []uint16, vals []float32, first int) error {
	dst = dst[:len(vals)]
	NarrowFloat16(dst, vals)
	for i, h := range dst {
		if v := vals[i]; h&0x7fff == 0x7c00 && !math.IsInf(float64(v), 0) {
			return fmt.Errorf("element %d is %g, beyond float16's range (±65504); load the model as float32", first+i, v)
		}
	}
	return nil
}
