package kernels

import (
	"math"

	"github.com/llorch/llorch-check/internal/ggmlnum"
)

// The pure-Go reference bodies of the kernels: what each one computes, in
// the summation order its assembly keeps, so that the two give the same
// bits. The pure-Go build (kernels_generic.go) runs these; the assembly
// build (kernels_amd64.go) runs them where no vector kernel applies (edges,
// tails, other CPUs). They call only each other.

// weight is the element type of float weight matrices: float32, or
// IEEE binary16 bits.
type weight interface{ float32 | uint16 }

// slab is the column width of a quant slab: 64 bytes of integers a row.
const slab = 64

// addGeneric is the reference semantics of Add.
func addGeneric(dst, src []float32) {
	for i, v := range src {
		dst[i] += v
	}
}

// axpyPanelGeneric is the reference semantics of axpyPanel:
// y[i,0:n] += Σ_{k'<k} x[i,k']·w[k',0:n] for i < m, strides in elements.
func axpyPanelGeneric(y []float32, ldy int, x []float32, ldx int, w []float32, ldw int, n, m, k int) {
	for i := 0; i < m; i++ {
		yi := y[i*ldy : i*ldy+n]
		for kk := 0; kk < k; kk++ {
			a := x[i*ldx+kk]
			wk := w[kk*ldw : kk*ldw+n]
			for j := range yi {
				yi[j] += a * wk[j]
			}
		}
	}
}

// dotPanelGeneric is the reference semantics of dotPanel:
// out[i*ldo+r] = h[i,0:n]·w[r*ldw:r*ldw+n] for r < 4, i < m.
func dotPanelGeneric(h []float32, ldh, m int, w []float32, ldw, n int, out []float32, ldo int) {
	for i := 0; i < m; i++ {
		hi := h[i*ldh : i*ldh+n]
		for r := 0; r < 4; r++ {
			out[i*ldo+r] = dotGeneric(hi, w[r*ldw:r*ldw+n])
		}
	}
}

// addDots: out[i*ldo+r] += h[i,0:n]·w[r,0:n] for r < 4, i < m: the
// columns of a dotPanel its kernel leaves.
func addDots(h []float32, ldh, m int, w []float32, ldw, n int, out []float32, ldo int) {
	for i := 0; i < m; i++ {
		hi := h[i*ldh : i*ldh+n]
		for r := 0; r < 4; r++ {
			out[i*ldo+r] += dotGeneric(hi, w[r*ldw:r*ldw+n])
		}
	}
}

// dotGeneric is h·w in four interleaved float32 sums, added pairwise at
// the end, as the vector kernels reduce their lanes.
func dotGeneric(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// widenBlockGeneric is the reference semantics of widenBlock:
// dst[r*n+j] = float32(src[r*lds+j]) for r < rows, j < n.
func widenBlockGeneric(dst []float32, src []uint16, lds, rows, n int) {
	for r := 0; r < rows; r++ {
		d, s := dst[r*n:(r+1)*n], src[r*lds:r*lds+n]
		for j, h := range s {
			d[j] = ggmlnum.Float16To32(h)
		}
	}
}

// scaleRowsGeneric: dst[g*slab+c] = ggmlnum.Scale(d[c], a[g*slab+c]) for
// g < n, c < slab.
func scaleRowsGeneric(dst []float32, d []uint16, a []int8, n int) {
	for g := range n {
		for c, f := range d[:slab] {
			dst[g*slab+c] = ggmlnum.Scale(f, a[g*slab+c], true)
		}
	}
}

// dequantGeneric is the reference semantics of the dequantisation kernels
// (dequantPieceKernel, dequantPiece4Kernel): dst[r*ldd+j] = ggml's float
// for the integer at row r, column c+j (int8 rows q8 a slab apart or, q8
// nil, nibble rows q4 slab/2 apart, + min) with scale s[c+j] and offset
// o[c+j] (o nil: none), for r < rows, j < n: rows of one group.
func dequantGeneric(dst []float32, ldd int, q8 []int8, q4 []byte, min int8, s, o []float32, c, rows, n int) {
	for r := range rows {
		d := dst[r*ldd : r*ldd+n]
		for j := range d {
			var q int8
			if q8 != nil {
				q = q8[r*slab+c+j]
			} else {
				q = int8(packed(q4[r*slab/2:], nil, 0, c+j)) + min
			}
			var oj float32
			if o != nil {
				oj = o[c+j]
			}
			d[j] = ggmlnum.GroupValue(q, s[c+j], oj, o != nil)
		}
	}
}

// unpackRowsGeneric: dst row r = the k rows' integers from their nibbles
// lo and higher bits hi (hbits each; none, and hi nil, for 4 bits), + min.
func unpackRowsGeneric(dst []int8, lo, hi []byte, hbits int, min int8, k int) {
	hw := slab * hbits / 8
	for r := range k {
		for c := range slab {
			dst[r*slab+c] = int8(packed(lo[r*slab/2:], hi[r*hw:], hbits, c)) + min
		}
	}
}

// packed is column c's stored integer (q − min) in a packed slab row: its
// nibble from lo and, with hbits, the bits above from hi.
func packed(lo, hi []byte, hbits, c int) byte {
	u := lo[c%(slab/2)] >> (4 * (c / (slab / 2))) & 0xf
	if hbits > 0 {
		hw := slab * hbits / 8
		u |= hi[c%hw] >> (hbits * (c / hw)) & (1<<hbits - 1) << 4
	}
	return u
}

// geluArgScale is −2·√(2/π), the exponent's factor, as float64.
const geluArgScale = -2 * 0.7978845608028654

// geluGeneric is GELU one value at a time. The explicit float64
// conversion keeps a compiler that fuses multiply-adds (GOAMD64=v3) from
// fusing u's sum, which the vector kernel does not.
func geluGeneric(x []float32) {
	for i, v := range x {
		f := float64(v)
		u := 0.044715 * f * f
		u = f + float64(u*f)
		x[i] = float32(f / (1 + math.Exp(geluArgScale*u)))
	}
}

// expShiftedGeneric is ExpShifted one value at a time.
func expShiftedGeneric(dst []float64, src []float32, sub float32) {
	for i, v := range src {
		dst[i] = math.Exp(float64(v) - float64(sub))
	}
}
