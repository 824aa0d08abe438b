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
// the bits of a 16-bit float (half says which).
type weight interface{ float32 | uint16 }

// half is the format of a 16-bit float matrix's bits. Both widen to
// float32 exactly, so the kernels widen them as they read and multiply in
// float32: the products have the bits of float32 weights holding the
// same values.
type half uint8

const (
	binary16 half = iota // IEEE binary16 (float16)
	bfloat16             // bfloat16: a float32's top 16 bits
)

// slab is the column width of a quant slab: 64 bytes of integers a row.
const slab = 64

// addGeneric is the reference semantics of Add.
func addGeneric(dst, src []float32) {
	for i, v := range src {
		dst[i] += v
	}
}

func addScaledGeneric(dst, src []float32, s float32) {
	for i, v := range src {
		dst[i] += float32(v * s) // the conversion forbids fusing
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

// widenBF16Generic is the reference semantics of widenBF16BlockTo:
// dst[r*n+j] = the bfloat16 src[r*lds+j] as float32, its bits the top
// half of the float32's (exact, NaN payloads included).
func widenBF16Generic(dst []float32, src []uint16, lds, rows, n int) {
	for r := 0; r < rows; r++ {
		d, s := dst[r*n:(r+1)*n], src[r*lds:r*lds+n]
		for j, h := range s {
			d[j] = math.Float32frombits(uint32(h) << 16)
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

// limbSlabGeneric is the reference semantics of the limb kernels: y[c] +=
// the limb product of one row's records rec with column c of the slab at
// column j0, for c < slab; s and o (nil without offsets) hold the slab's
// formed scales and offsets, a row of slab per weight group.
func (w *quant) limbSlabGeneric(y []float32, rec []byte, s, o []float32, j0 int) {
	var acc [slab]float32
	var q [limbRows][slab]int8
	var packed [limbRows]int64
	size := w.g.Size
	for a := range w.k / limbRows {
		r := rec[a*limbRecord : (a+1)*limbRecord]
		w.unpackBlock(&q, w.block(a*limbRows, j0))
		for i := range limbRows {
			packed[i] = int64(int8(r[i]))<<42 + int64(int8(r[32+i]))<<21 + int64(int8(r[64+i]))
		}
		scale := getF32(r, recScale)
		for g := range limbRows / size {
			wg := a*limbRows/size + g
			sum := getF32(r, recSum0+4*g)
			for c := range slab {
				var S int64
				for i := g * size; i < (g+1)*size; i++ {
					S += packed[i] * int64(q[i][c])
				}
				L := S << 43 >> 43
				S = (S - L) >> 21
				M := S << 43 >> 43
				H := (S - M) >> 21
				t := float32(float64(M)*256 + float64(L)) // exact, then rounded once
				t = float32(float64(H)*65536 + float64(t))
				acc[c] = fma32(t, s[wg*slab+c]*scale, acc[c])
				if o != nil {
					acc[c] = fma32(sum, o[wg*slab+c], acc[c])
				}
			}
		}
	}
	for c := range y[:slab] {
		y[c] += acc[c]
	}
}

// fma32 is a·b + c rounded once to float32. In float64 a·b is exact but
// the sum is rounded, and rounding that again to float32 can land on the
// other side of a float32 tie; the sum's exact error (TwoSum) settles it.
func fma32(a, b, c float32) float32 {
	p, z := float64(a)*float64(b), float64(c)
	s := p + z
	r := float32(s)
	if float64(r) == s || math.IsInf(s, 0) || math.IsNaN(s) {
		return r
	}
	bb := s - p
	e := (p - (s - bb)) + (z - bb) // s + e = p + z exactly
	if e == 0 {
		return r
	}
	// Only a tie can round the wrong way: s halfway between r and its
	// neighbour beyond s.
	next := math.Nextafter32(r, float32(math.Copysign(math.Inf(1), s-float64(r))))
	if s-float64(r) != float64(next)-s {
		return r
	}
	if (e > 0) == (float64(next) > float64(r)) {
		return next
	}
	return r
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
