package kernels

import (
	"fmt"
	"unsafe"

	"github.com/llorch/llorch-check/internal/ggmlnum"
)

// MatrixImage describes a Matrix's storage for a weights cache (a file of
// the matrices as the kernels hold them, mapped on the next load instead
// of re-laid): its kind and layout parameters, and the lengths of its
// arrays in Arrays' order. Image and RestoreMatrix are inverses, and a
// restored matrix's products have the original's bits.
type MatrixImage struct {
	Kind string `json:"kind"` // "" (empty), "f32", "f16", "bf16" (row-major), "slabs" or "quant"
	K    int    `json:"k,omitempty"`
	N    int    `json:"n,omitempty"`
	T    bool   `json:"t,omitempty"` // slabs of the transpose (SlabbedT)
	// Slabs of float16 or of bfloat16 bits (neither: float32).
	F16  bool `json:"f16,omitempty"`
	BF16 bool `json:"bf16,omitempty"`
	// A quantised matrix's integers' width and smallest value, groups, and
	// whether it is the transpose of its storage.
	Bits       int             `json:"bits,omitempty"`
	Min        int             `json:"min,omitempty"`
	Groups     *ggmlnum.Groups `json:"groups,omitempty"`
	Transposed bool            `json:"transposed,omitempty"`
	Arrays     []int           `json:"arrays"` // byte lengths
}

// ArraySlack is the readable bytes a restored array needs past its end:
// a quantised matrix's integers are read a block of 2048 bytes at a time.
const ArraySlack = 2048

// Slack is the readable bytes array i of the image needs past its end
// (RestoreMatrix refuses less): ArraySlack for a quantised matrix's
// integers, none for the others.
func (img MatrixImage) Slack(i int) int {
	if img.Kind == "quant" && i == 0 {
		return ArraySlack
	}
	return 0
}

// Image returns w's description and its arrays as bytes (views of w's
// storage, not copies), in the order RestoreMatrix takes them.
func (w Matrix) Image() (MatrixImage, [][]byte) {
	switch {
	case w.q != nil:
		q := w.q
		g := q.g
		img := MatrixImage{Kind: "quant", K: q.k, N: q.n, Bits: q.bits, Min: int(q.min), Groups: &g, Transposed: q.transposed}
		arrays := [][]byte{q.ints, asBytes(q.d), asBytes(q.dm), asBytes(q.a), asBytes(q.b)}
		return img.with(arrays), arrays
	case w.s != nil:
		half := w.s.h16 != nil
		img := MatrixImage{Kind: "slabs", K: w.s.k, N: w.s.n, T: w.t,
			F16: half && w.s.form == binary16, BF16: half && w.s.form == bfloat16}
		arrays := [][]byte{asBytes(w.s.f32), asBytes(w.s.h16)}
		return img.with(arrays), arrays
	case w.h16 != nil:
		arrays := [][]byte{asBytes(w.h16)}
		kind := "f16"
		if w.form == bfloat16 {
			kind = "bf16"
		}
		return MatrixImage{Kind: kind}.with(arrays), arrays
	case w.f32 != nil:
		arrays := [][]byte{asBytes(w.f32)}
		return MatrixImage{Kind: "f32"}.with(arrays), arrays
	}
	return MatrixImage{Arrays: []int{}}, nil
}

func (img MatrixImage) with(arrays [][]byte) MatrixImage {
	img.Arrays = make([]int, len(arrays))
	for i, a := range arrays {
		img.Arrays[i] = len(a)
	}
	return img
}

// RestoreMatrix builds the matrix img describes over arrays (each with
// ArraySlack readable bytes past its end, aligned to 4 bytes), which it
// uses in place: they must outlive the matrix and not change. Lengths
// that contradict the shape are an error, never an out-of-range read.
func RestoreMatrix(img MatrixImage, arrays [][]byte) (Matrix, error) {
	bad := func(format string, args ...any) (Matrix, error) {
		return Matrix{}, fmt.Errorf("kernels: a %s matrix image: %s", img.Kind, fmt.Sprintf(format, args...))
	}
	want := len(img.Arrays)
	if len(arrays) != want {
		return bad("%d arrays given, %d described", len(arrays), want)
	}
	for i, a := range arrays {
		if len(a) != img.Arrays[i] {
			return bad("array %d holds %d bytes, %d described", i, len(a), img.Arrays[i])
		}
		if len(a) > 0 && uintptr(unsafe.Pointer(unsafe.SliceData(a)))%4 != 0 {
			return bad("array %d is not aligned to 4 bytes", i)
		}
	}
	switch img.Kind {
	case "":
		if want != 0 {
			return bad("arrays for an empty matrix")
		}
		return Matrix{}, nil
	case "f32", "f16", "bf16":
		if want != 1 || img.Kind == "f32" && len(arrays[0])%4 != 0 || len(arrays[0])%2 != 0 {
			return bad("%d arrays, want 1 of whole elements", want)
		}
		switch img.Kind {
		case "f16":
			return Float16(fromBytes[uint16](arrays[0])), nil
		case "bf16":
			return BFloat16(fromBytes[uint16](arrays[0])), nil
		}
		return Float32(fromBytes[float32](arrays[0])), nil
	case "slabs":
		if want != 2 || img.K <= 0 || img.N <= 0 || img.F16 && img.BF16 {
			return bad("%d arrays of a %dx%d matrix (f16 %t, bf16 %t)", want, img.K, img.N, img.F16, img.BF16)
		}
		s := &slabs{k: img.K, n: img.N}
		elems, size := len(arrays[0])/4, 4
		if img.F16 || img.BF16 {
			elems, size = len(arrays[1])/2, 2
			s.h16 = fromBytes[uint16](arrays[1])
			if img.BF16 {
				s.form = bfloat16
			}
		} else {
			s.f32 = fromBytes[float32](arrays[0])
		}
		if elems != img.K*img.N || len(arrays[0])+len(arrays[1]) != size*elems {
			return bad("%d and %d bytes for %dx%d", len(arrays[0]), len(arrays[1]), img.K, img.N)
		}
		return Matrix{s: s, t: img.T}, nil
	case "quant":
		return restoreQuant(img, arrays)
	}
	return bad("unknown kind")
}

func restoreQuant(img MatrixImage, arrays [][]byte) (Matrix, error) {
	g := img.Groups
	K, N := img.K, img.N
	if len(arrays) != 5 || g == nil || K <= 0 || N <= 0 || g.Bits != img.Bits || g.Min != img.Min ||
		g.Size <= 0 || g.Super < g.Size || K%g.Super != 0 || K%limbRows != 0 ||
		g.Bits < 4 || g.Bits > 8 || g.Bits == 7 || g.Min < -128 || g.Min+1<<g.Bits > 128 {
		return Matrix{}, fmt.Errorf("kernels: a quant matrix image of %dx%d: groups %+v, %d bits from %d, %d arrays", K, N, g, img.Bits, img.Min, len(arrays))
	}
	np := (N + slab - 1) / slab * slab
	B, G := K/g.Super, K/g.Size
	want := [5]int{K * np * g.Bits / 8, 2 * B * np, 0, 0, 0}
	if g.Offset {
		want[2] = 2 * B * np
	}
	if g.Factored {
		want[3] = G * np
		if g.Offset {
			want[4] = G * np
		}
	}
	for i, a := range arrays {
		if len(a) != want[i] {
			return Matrix{}, fmt.Errorf("kernels: a quant matrix image of %dx%d: array %d holds %d bytes, want %d", K, N, i, len(a), want[i])
		}
	}
	if cap(arrays[0]) < len(arrays[0])+ArraySlack {
		return Matrix{}, fmt.Errorf("kernels: a quant matrix image of %dx%d: %d bytes readable past the integers, want %d", K, N, cap(arrays[0])-len(arrays[0]), ArraySlack)
	}
	q := &quant{ints: arrays[0][: len(arrays[0]) : len(arrays[0])+ArraySlack], bits: g.Bits, min: int8(g.Min), g: *g, k: K, n: N, transposed: img.Transposed,
		d: fromBytes[uint16](arrays[1]), dm: fromBytes[uint16](arrays[2]), a: fromBytes[int8](arrays[3]), b: fromBytes[int8](arrays[4])}
	return Matrix{q: q}, nil
}

// asBytes views s's elements as bytes.
func asBytes[T uint16 | float32 | int8](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(z)))
}

// fromBytes views b as elements (nil for none); b's length is a multiple
// of the element's size and its start aligned to it.
func fromBytes[T uint16 | float32 | int8](b []byte) []T {
	if len(b) == 0 {
		return nil
	}
	var z T
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/int(unsafe.Sizeof(z)))
}

// Is says w holds a logical rows×cols matrix as the loaders build one:
// row-major, slabs of itself or of its transpose (SlabbedT), or quantised
// with rows along the reduction or (transposed) the file's own layout. A
// restored matrix is checked with it against the model's shapes, since
// an image's own consistency does not say what the model expects.
func (w Matrix) Is(rows, cols int) bool {
	switch {
	case w.q != nil:
		if w.q.transposed {
			return w.q.n == rows && w.q.k == cols
		}
		return w.q.k == rows && w.q.n == cols
	case w.s != nil:
		if w.t {
			return w.s.n == rows && w.s.k == cols
		}
		return w.s.k == rows && w.s.n == cols
	}
	return w.Len() == rows*cols && rows*cols > 0
}
