//go:build amd64 && !purego

package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestUnpackRowsAVX2: the AVX2 unpack, which CPUs without AVX-512 use for
// every packed type (nibbles included), gives the generic code's bytes.
func TestUnpackRowsAVX2(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2 on this CPU")
	}
	r := rand.New(rand.NewPCG(7, 8))
	for _, hbits := range []int{0, 1, 2} {
		const k = 29
		lo, hi := make([]byte, k*slab/2), make([]byte, k*slab*hbits/8+1)
		for i := range lo {
			lo[i] = byte(r.IntN(256))
		}
		for i := range hi {
			hi[i] = byte(r.IntN(256))
		}
		got, want := make([]int8, k*slab), make([]int8, k*slab)
		unpackRowsAVX2(&got[0], &lo[0], &hi[0], hbits, -16, k)
		unpackRowsGeneric(want, lo, hi, hbits, -16, k)
		require.Equal(t, want, got, "hbits %d", hbits)
	}
}

// TestScaleRowsAVX2: the 256-bit scale kernel gives the generic bits.
func TestScaleRowsAVX2(t *testing.T) {
	if !useF16C {
		t.Skip("no AVX2 and F16C on this CPU")
	}
	r := rand.New(rand.NewPCG(9, 10))
	d, a := make([]uint16, slab), make([]int8, 7*slab)
	for i := range d {
		d[i] = uint16(r.IntN(1 << 16))
	}
	d[0], d[1] = 0x0001, 0x7c00 // a subnormal, infinity
	for i := range a {
		a[i] = int8(r.IntN(256) - 128)
	}
	got, want := make([]float32, 7*slab), make([]float32, 7*slab)
	scaleRowsAVX2(&got[0], &d[0], &a[0], 7)
	scaleRowsGeneric(want, d, a, 7)
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(math.IsNaN(float64(got[i])) && math.IsNaN(float64(want[i]))) {
			t.Fatalf("scale %d: %g, want %g", i, got[i], want[i])
		}
	}
}
