package sampling

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestMaxOfIsMathMax: maxOf is math.Max folded from −Inf, bit for bit,
// on the special values in every order and on random rows.
func TestMaxOfIsMathMax(t *testing.T) {
	inf, nan, negZero := math.Inf(1), math.NaN(), math.Copysign(0, -1)
	special := []float64{inf, -inf, nan, 0, negZero, 1, -1}
	var rows [][]float64
	for _, a := range special {
		rows = append(rows, []float64{a})
		for _, b := range special {
			rows = append(rows, []float64{a, b})
			for _, c := range special {
				rows = append(rows, []float64{a, b, c})
			}
		}
	}
	rows = append(rows, nil)
	r := rand.New(rand.NewPCG(1, 2))
	for range 100 {
		row := make([]float64, 1+r.IntN(50))
		for i := range row {
			row[i] = r.NormFloat64() * 10
		}
		rows = append(rows, row)
	}
	for _, row := range rows {
		want := math.Inf(-1)
		for _, v := range row {
			want = math.Max(want, v)
		}
		if got := maxOf(row); math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Errorf("maxOf(%v) = %v, math.Max's fold %v", row, got, want)
		}
		f32 := make([]float32, len(row))
		for i, v := range row {
			f32[i] = float32(v)
		}
		want32 := math.Inf(-1)
		for _, v := range f32 {
			want32 = math.Max(want32, float64(v))
		}
		if got := maxOf(f32); math.Float64bits(got) != math.Float64bits(want32) && !(math.IsNaN(got) && math.IsNaN(want32)) {
			t.Errorf("maxOf(float32 %v) = %v, math.Max's fold %v", f32, got, want32)
		}
	}
}

// TestSoftmaxSkipsMinusInf: softmax64Into, which leaves −Inf entries 0
// without Exp, is the plain formula bit for bit, on rows of the special
// values and on rows mostly −Inf, as constrained decoding makes them.
func TestSoftmaxSkipsMinusInf(t *testing.T) {
	plain := func(s []float64) []float64 {
		out := make([]float64, len(s))
		mx := math.Inf(-1)
		for _, v := range s {
			mx = math.Max(mx, v)
		}
		if math.IsInf(mx, -1) {
			return out
		}
		sum := 0.0
		for i, v := range s {
			out[i] = math.Exp(v - mx)
			sum += out[i]
		}
		for i := range out {
			out[i] /= sum
		}
		return out
	}
	inf, nan := math.Inf(1), math.NaN()
	special := []float64{inf, -inf, nan, 0, 1, -3}
	var rows [][]float64
	for _, a := range special {
		for _, b := range special {
			for _, c := range special {
				rows = append(rows, []float64{a, b, c})
			}
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 50 {
		row := make([]float64, 200)
		for i := range row {
			row[i] = -inf
			if r.IntN(20) == 0 {
				row[i] = r.NormFloat64() * 5
			}
		}
		rows = append(rows, row)
	}
	for _, row := range rows {
		want, got := plain(row), softmax64(row)
		for i := range want {
			if math.Float64bits(got[i]) != math.Float64bits(want[i]) && !(math.IsNaN(got[i]) && math.IsNaN(want[i])) {
				t.Fatalf("softmax64(%v)[%d] = %v, the plain formula's %v", row, i, got[i], want[i])
			}
		}
	}
}
