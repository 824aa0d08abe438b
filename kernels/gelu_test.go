package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestGELUSameBits: the vector kernel gives geluGeneric's bits on every
// class of float32 input, including those it hands back to Go (beyond
// ±700 in the exponent, infinities, NaN) at every position of a block.
func TestGELUSameBits(t *testing.T) {
	xs := inputClasses(rand.New(rand.NewPCG(41, 42)), -40, 40, 0.00317, 3,
		[]float32{0, float32(math.Copysign(0, -1)), 1e-30, -1e-30, 1e-45, 3.4e38, -3.4e38,
			float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), -60, 60, -1e4, 1e4})
	got, want := append([]float32(nil), xs...), append([]float32(nil), xs...)
	GELU(got)
	geluGeneric(want)
	for i := range xs {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
			t.Fatalf("gelu(%g) = %g (%#x), want %g (%#x)", xs[i], got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
		}
	}
}

// inputClasses is a vector kernel's test input: a sweep of lo..hi, normal
// values of the given scale and random bits, each special value at every
// position of a block of four (in either block of a pair), and a tail of
// three.
func inputClasses(r *rand.Rand, lo, hi, step, scale float64, special []float32) []float32 {
	var xs []float32
	for v := lo; v <= hi; v += step {
		xs = append(xs, float32(v))
	}
	for range 200000 {
		xs = append(xs, float32(r.NormFloat64()*scale), math.Float32frombits(r.Uint32()))
	}
	// Twice, a block apart: the kernels take blocks in pairs, and each
	// special block must be the first of a pair and the second.
	for range 2 {
		for i := range 4 {
			for _, s := range special {
				block := []float32{0.5, -0.5, 1.5, -2.5}
				block[i] = s
				xs = append(xs, block...)
			}
		}
		xs = append(xs, 0.25, -0.25, 0.75, -0.75)
	}
	return append(xs, 1, 2, 3)
}

func BenchmarkGELU(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, 3072*128)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	buf := make([]float32, len(x))
	for b.Loop() {
		copy(buf, x)
		GELU(buf)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(x)), "ns/value")
}
