package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestScaleMax: the kernel scales every value with the scalar loop's bits
// and returns its maximum (zeros of either sign equal), NaN wherever a
// NaN appears, lo when every value is below it, for lengths around the
// vector width, dividing and multiplying.
func TestScaleMax(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, n := range []int{0, 1, 7, 8, 9, 16, 31, 64, 130} {
		for _, c := range []struct {
			name   string
			plant  map[int]float32 // index (mod n) → value
			scale  float32
			mul    bool
			lo     float32
			negate bool
		}{
			{"plain", nil, 8, false, -math.MaxFloat32, false},
			{"multiply", nil, 0.125, true, -math.MaxFloat32, false},
			{"odd divisor", nil, float32(math.Sqrt(72)), false, -math.MaxFloat32, false},
			{"NaN first", map[int]float32{0: nan}, 8, false, -math.MaxFloat32, false},
			{"NaN last", map[int]float32{-1: nan}, 8, false, -math.MaxFloat32, false},
			{"infinities", map[int]float32{2: -inf, 3: inf}, 8, false, -math.MaxFloat32, false},
			{"zeros", map[int]float32{0: 0, 1: float32(math.Copysign(0, -1))}, 8, false, -math.MaxFloat32, true},
			{"lo above all", nil, 8, false, 1e30, false},
			{"subnormals", map[int]float32{1: 1e-45, 5: -1e-44}, 3, false, -math.MaxFloat32, true},
		} {
			t.Run(fmt.Sprintf("%s/%d", c.name, n), func(t *testing.T) {
				x := randSlice(r, n)
				for i := range x {
					if c.negate {
						x[i] = -float32(math.Abs(float64(x[i])))
					}
				}
				for at, v := range c.plant {
					if n > 0 {
						x[(at+n)%n] = v
					}
				}
				want := append([]float32(nil), x...)
				wantMax := scaleMaxGeneric(want, c.scale, c.mul, c.lo)
				got := ScaleMax(x, c.scale, c.mul, c.lo)
				for i := range x {
					require.Equal(t, math.Float32bits(want[i]), math.Float32bits(x[i]), "value %d", i)
				}
				if math.IsNaN(float64(wantMax)) {
					require.True(t, math.IsNaN(float64(got)), "max %g, want NaN", got)
				} else {
					require.Equal(t, wantMax, got)
				}
			})
		}
	}
}

// TestNarrowScaled: float32(src[i]·m) with the scalar conversion's bits,
// overflow, underflow to subnormals and NaN included.
func TestNarrowScaled(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 44))
	for _, n := range []int{0, 1, 3, 4, 5, 17, 130} {
		src := make([]float64, n)
		for i := range src {
			src[i] = r.Float64() * math.Pow(2, float64(r.IntN(400)-200))
		}
		if n > 4 {
			src[0], src[1], src[2], src[3] = math.NaN(), 1e300, 1e-300, 0.1+1e-17
		}
		for _, m := range []float64{1, 1.0 / 3, 1e-5} {
			want, got := make([]float32, n), make([]float32, n)
			narrowScaledGeneric(want, src, m)
			NarrowScaled(got, src, m)
			for i := range want {
				require.Equal(t, math.Float32bits(want[i]), math.Float32bits(got[i]), "n=%d m=%g value %d (%g)", n, m, i, src[i])
			}
		}
	}
}
