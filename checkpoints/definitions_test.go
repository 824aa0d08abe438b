package checkpoints

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOverrides: --atol alone keeps every checkpoint's own rtol, and the
// other way round; exact checkpoints get none; a per-checkpoint spec wins.
func TestOverrides(t *testing.T) {
	cp8, _ := ByNumber(8)
	cp11, _ := ByNumber(11)
	for _, c := range []struct {
		name       string
		atol, rtol float64
		specs      []string
		want       map[int]Tolerance
	}{
		{"nothing", -1, -1, nil, map[int]Tolerance{}},
		{"atol keeps rtol", 0.5, -1, nil, nil},
		{"rtol keeps atol", -1, 0.25, nil, nil},
		{"spec only", -1, -1, []string{"3-4=1e-3,0"}, map[int]Tolerance{3: {1e-3, 0}, 4: {1e-3, 0}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Overrides(c.atol, c.rtol, c.specs)
			require.NoError(t, err)
			if c.want != nil {
				require.Equal(t, c.want, got)
				return
			}
			require.NotContains(t, got, 10, "exact checkpoints have no tolerance")
			require.NotContains(t, got, 12)
			for _, cp := range []Checkpoint{cp8, cp11} {
				want := cp.Tolerance
				if c.atol >= 0 {
					want.Atol = c.atol
				}
				if c.rtol >= 0 {
					want.Rtol = c.rtol
				}
				require.Equal(t, want, got[cp.Number], "checkpoint %d", cp.Number)
			}
		})
	}
	got, err := Overrides(0.5, -1, []string{"8=1,2"})
	require.NoError(t, err)
	require.Equal(t, Tolerance{1, 2}, got[8], "the per-checkpoint spec wins")
	require.Equal(t, Tolerance{0.5, cp11.Tolerance.Rtol}, got[11])
	_, err = Overrides(-1, -1, []string{"8=x"})
	require.Error(t, err)
}
