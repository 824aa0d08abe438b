package limbs

import (
	"math"
	"math/rand/v2"
)

// group is the activations' (and the weights' scales') group size.
const group = 32

// matrix is a [K][N] matrix of 4-bit integers u with a scale s and an
// offset o per group of 32 rows and column: w = fl(fl(u·s) + o), ggml's
// Q4_K value (gguf.GroupValue).
type matrix struct {
	K, N   int
	u      [][]uint8   // [K][N], 0..15
	s, o   [][]float32 // [K/group][N]
	packed []byte      // [N/64][K/group][4 octs][4 strips of 16 columns][64]
}

// newMatrix draws one. Its packing serves VPDPBUSD: in a strip's 64
// bytes, dword lane j holds column j's integers of four consecutive rows,
// rows k..k+3 in the low nibbles and k+4..k+7 in the high ones.
func newMatrix(r *rand.Rand, K, N int) *matrix {
	m := &matrix{K: K, N: N}
	for range K {
		row := make([]uint8, N)
		for n := range row {
			row[n] = uint8(r.IntN(16))
		}
		m.u = append(m.u, row)
	}
	for range K / group {
		s, o := make([]float32, N), make([]float32, N)
		for n := range s {
			s[n] = float32(0.001 + 0.01*r.Float64())
			o[n] = -float32(0.05 * r.Float64())
		}
		m.s, m.o = append(m.s, s), append(m.o, o)
	}
	m.packed = make([]byte, 0, K*N/2)
	for n0 := 0; n0 < N; n0 += 64 {
		for g := range K / group {
			for oct := range 4 {
				k0 := g*group + oct*8
				for c := range 4 {
					for j := range 16 {
						for b := range 4 {
							n := n0 + c*16 + j
							m.packed = append(m.packed, m.u[k0+b][n]|m.u[k0+4+b][n]<<4)
						}
					}
				}
			}
		}
	}
	return m
}

// value is the weight at row k, column n.
func (m *matrix) value(k, n int) float32 {
	g := k / group
	p := m.u[k][n]
	return float32(float32(float32(p)*m.s[g][n]) + m.o[g][n])
}

// activations is one row of x as the limb kernel reads it: per group,
// the three limbs (high, middle, low; 32 bytes each), the power of two
// 2^-shift that scales the integers back, and the group's sum.
type activations struct {
	limbs []int8
	scale []float32
	sum   []float32
}

// split scales each group of x by the power of two that brings its
// largest magnitude into [2^21, 2^22), rounds to integers (ties to even)
// and writes each as h·2^16 + m·2^8 + l with h, m, l in -128..127.
func split(x []float32) activations {
	var a activations
	for g := range len(x) / group {
		xs := x[g*group : (g+1)*group]
		big := 0.0
		for _, v := range xs {
			big = math.Max(big, math.Abs(float64(v)))
		}
		_, e := math.Frexp(big) // big < 2^e
		shift := 22 - e
		var h, mid, l [group]int8
		var sum float32
		for i, v := range xs {
			xi := int32(math.RoundToEven(math.Ldexp(float64(v), shift)))
			l[i] = int8(xi)
			r := (xi - int32(l[i])) >> 8
			mid[i] = int8(r)
			h[i] = int8((r - int32(mid[i])) >> 8)
			sum += v
		}
		a.limbs = append(append(append(a.limbs, h[:]...), mid[:]...), l[:]...)
		a.scale = append(a.scale, float32(math.Ldexp(1, -shift)))
		a.sum = append(a.sum, sum)
	}
	return a
}

// scales is the factors one row's slab needs: each group's s·2^-shift
// (exact: a power of two) and o, rows of 64 columns.
func (m *matrix) scales(a activations, n0 int) (s, o []float32) {
	for g := range m.K / group {
		for c := range 64 {
			s = append(s, m.s[g][n0+c]*a.scale[g])
			o = append(o, m.o[g][n0+c])
		}
	}
	return s, o
}

// mulAsm adds x·W to y with the assembly kernel, slab by slab.
func (m *matrix) mulAsm(y []float32, a activations, s, o [][]float32) {
	per := m.K / group * 4 * 256
	for n0 := 0; n0 < m.N; n0 += 64 {
		q4slab(&y[n0], &m.packed[n0/64*per], &a.limbs[0], &s[n0/64][0], &o[n0/64][0], &a.sum[0], m.K/group)
	}
}

// mulGo is mulAsm's arithmetic in Go, operation for operation: the limb
// sums are exact, so the float32 steps after them decide the bits.
func (m *matrix) mulGo(y []float32, a activations) {
	for n := range m.N {
		acc := y[n]
		for g := range m.K / group {
			var ah, am, al int32
			for i := range group {
				p := int32(m.u[g*group+i][n])
				ah += p * int32(a.limbs[g*96+i])
				am += p * int32(a.limbs[g*96+32+i])
				al += p * int32(a.limbs[g*96+64+i])
			}
			t := fma(float32(am), 256, float32(al))
			t = fma(float32(ah), 65536, t)
			acc = fma(t, m.s[g][n]*a.scale[g], acc)
			acc = fma(a.sum[g], m.o[g][n], acc)
		}
		y[n] = acc
	}
}

func fma(a, b, c float32) float32 { return float32(math.FMA(float64(a), float64(b), float64(c))) }

// mulFloat is the kernels' present arithmetic: each weight formed as a
// float32, k-order FMAs in chains of 256 from zero, added to y.
func (m *matrix) mulFloat(y, x []float32) {
	for n := range m.N {
		for k0 := 0; k0 < m.K; k0 += 256 {
			var acc float32
			for k := k0; k < min(k0+256, m.K); k++ {
				acc = fma(x[k], m.value(k, n), acc)
			}
			y[n] += acc
		}
	}
}

// mulF64 is the float64 truth.
func (m *matrix) mulF64(x []float32) []float64 {
	out := make([]float64, m.N)
	for n := range out {
		for k := range m.K {
			out[n] += float64(x[k]) * float64(m.value(k, n))
		}
	}
	return out
}
