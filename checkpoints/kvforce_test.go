package checkpoints

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFlipAllowed(t *testing.T) {
	const step = 1.0 / 512 // float16's spacing in [2, 4)
	a, b := float32(2), float32(2+step)
	const mid = 2 + step/2
	tol := Tolerance{Atol: 1e-4, Rtol: 1e-4} // 3e-4 at 2
	for _, tc := range []struct {
		name       string
		got, want  float32
		goU        float32
		exact      float64
		wantAllows bool
	}{
		{"neighbours, exact at the midpoint", a, b, mid - 1e-5, mid, true},
		{"the other way round", b, a, mid + 1e-5, mid + 1e-5, true},
		{"exact within tolerance of the midpoint", a, b, mid - 1e-5, mid + 2.9e-4, true},
		{"exact beyond tolerance of the midpoint", a, b, mid - 1e-5, mid + 3.1e-4, false},
		{"two steps apart", a, 2 + 2*step, 2 + step - 1e-5, 2 + step, false},
		{"Go's value is not its own rounded", a, b, mid + 1e-5, mid, false},
		{"Go's value is no float16", a + 1e-6, b, a + 1e-6, mid, false},
		{"the set's value is no float16", a, b + 1e-6, mid - 1e-5, mid, false},
		{"opposite signs", 6e-8, -6e-8, 6e-8, 0, false},
		{"negative neighbours", -a, -b, -mid + 1e-5, -mid, true},
	} {
		assert.Equal(t, tc.wantAllows, flipAllowed(tc.got, tc.want, tc.goU, tc.exact, tol), tc.name)
	}
}
