package model

import (
	"math"
	"testing"
)

// TestGeluNewFast compares the exp form of GELU with the math.Tanh formula. Far
// left the tanh form rounds 1+tanh to exactly 0 where the identity keeps
// the true value (below 1e-15): an absolute 1e-12 allows that.
func TestGeluNewFast(t *testing.T) {
	var xs []float32
	for v := -30.0; v <= 30; v += 0.00731 {
		xs = append(xs, float32(v))
	}
	xs = append(xs, 0, -0, 1e-30, -1e-30, 3.4e38, -3.4e38, 1e-6)
	got := append([]float32(nil), xs...)
	geluNew(got)
	for i, v := range xs {
		f := float64(v)
		want := 0.5 * f * (1 + math.Tanh(0.7978845608028654*(f+0.044715*f*f*f)))
		if d := math.Abs(float64(got[i]) - want); d > 1e-7*math.Abs(want)+1e-12 {
			t.Fatalf("gelu(%g) = %g, want %g", v, got[i], want)
		}
	}
}
