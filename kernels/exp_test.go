package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestExpShiftedSameBits: the vector kernel gives math.Exp's float64 bits
// for softmax's arguments (scores minus their maximum) and for every class
// it hands back to Go (beyond ±700, infinities, NaN) at every position of
// a block, and on a tail.
func TestExpShiftedSameBits(t *testing.T) {
	xs := inputClasses(rand.New(rand.NewPCG(43, 44)), -120, 20, 0.00291, 8,
		[]float32{0, float32(math.Copysign(0, -1)), 1e-45, -745, -701, 701, 710,
			3.4e38, -3.4e38, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())})
	for _, sub := range []float32{0, 3.25, -17.5, float32(math.Inf(1))} {
		got, want := make([]float64, len(xs)), make([]float64, len(xs))
		ExpShifted(got, xs, sub)
		expShiftedGeneric(want, xs, sub)
		for i := range xs {
			if math.Float64bits(got[i]) != math.Float64bits(want[i]) && !(math.IsNaN(got[i]) && math.IsNaN(want[i])) {
				t.Fatalf("exp(%g − %g) = %g (%#x), want %g (%#x)", xs[i], sub, got[i], math.Float64bits(got[i]), want[i], math.Float64bits(want[i]))
			}
		}
	}
}

func BenchmarkExpShifted(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, 4096)
	for i := range x {
		x[i] = float32(-8 * r.Float64())
	}
	dst := make([]float64, len(x))
	for _, c := range []struct {
		name string
		f    func([]float64, []float32, float32)
	}{{"kernel", ExpShifted}, {"math.Exp", expShiftedGeneric}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				c.f(dst, x, 0)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(x)), "ns/value")
		})
	}
}
