package checkpoints

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCompare(t *testing.T) {
	nan := float32(math.NaN())
	tol := Tolerance{Atol: 1e-4, Rtol: 1e-4}
	tests := []struct {
		name       string
		got, want  []float32
		tol        Tolerance
		mismatches int
		worst      int
	}{
		{"identical", []float32{1, -2, 3}, []float32{1, -2, 3}, tol, 0, 0},
		{"inside atol+rtol·|want|", []float32{1.00015}, []float32{1}, tol, 0, 0},
		{"just outside", []float32{1.0003}, []float32{1}, tol, 1, 0},
		{"rtol scales with want", []float32{1000.1}, []float32{1000}, tol, 0, 0},
		{"NaN never passes", []float32{0, nan}, []float32{0, 0}, tol, 1, 1},
		{"+Inf never passes", []float32{float32(math.Inf(1))}, []float32{1}, tol, 1, 0},
		{"exact comparison", []float32{1, 2}, []float32{1, 2.0000002}, Tolerance{}, 1, 1},
		{"worst is by tolerance, not abs error", []float32{1000.05, 0.0003}, []float32{1000, 0}, tol, 1, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := compare(tc.got, tc.want, nil, tc.tol, nil)
			require.Equal(t, tc.mismatches, s.Mismatches)
			require.Equal(t, tc.worst, s.Worst)
			require.Equal(t, len(tc.want), s.Compared)
		})
	}
}

func TestCompareStats(t *testing.T) {
	s := compare([]float32{1, 2.5, 0}, []float32{1, 2, 0}, []float64{1, 2.25, 0}, Tolerance{1e-4, 1e-4}, nil)
	require.InDelta(t, 0.5, s.MaxAbsErr, 1e-12)
	require.InDelta(t, 0.25, s.MaxRelErr, 1e-12, "relative error over want ≠ 0 only")
	require.InDelta(t, (1+5)/(math.Sqrt(1+6.25)*math.Sqrt(5)), s.Cosine, 1e-12)
	require.True(t, s.HasBudget)
	require.InDelta(t, 0.25, s.GoErrF64, 1e-12)
	require.InDelta(t, 0.25, s.RefErrF64, 1e-12)
	require.InDelta(t, 1, s.BudgetRate, 1e-12)

	exact := compare([]float32{1}, []float32{1}, []float64{1}, Tolerance{}, nil)
	require.Equal(t, 0.0, exact.BudgetRate, "Go exact: no error to budget")
	worse := compare([]float32{1.5}, []float32{1}, []float64{1}, Tolerance{1, 0}, nil)
	require.InDelta(t, 0.5/float32Spacing(1), worse.BudgetRate, 1e-6,
		"PyTorch exact: its error counts as float32's spacing at 1, not 0")

	// A reference that landed closer to the truth than float32 can resolve
	// (a lucky scalar) does not inflate the ratio: -17.25 has spacing 2^-19.
	lucky := compare64(-17.25+2e-6, -17.25+3e-7, []float64{-17.25}, Tolerance{1e-4, 0})
	require.InDelta(t, 2e-6/math.Pow(2, -19), lucky.BudgetRate, 1e-9)
	zero := compare([]float32{0}, []float32{0}, []float64{0}, Tolerance{}, nil)
	require.Equal(t, 1.0, zero.BudgetRate, "all exact zeros")
}

func TestCausalMaskExcludesOnlyFutureKeys(t *testing.T) {
	// [H=1, T=3, T=3]: entries above the diagonal are masked.
	shape := []int{1, 3, 3}
	skip := causalMask(shape)
	var masked []int
	for i := 0; i < 9; i++ {
		if skip(i) {
			masked = append(masked, i)
		}
	}
	require.Equal(t, []int{1, 2, 5}, masked)

	// Garbage in masked entries does not fail; garbage in a visible one does.
	want := []float32{1, 0, 0, 1, 1, 0, 1, 1, 1}
	got := append([]float32(nil), want...)
	got[2] = -3e38
	require.Zero(t, compare(got, want, nil, Tolerance{1e-4, 1e-4}, skip).Mismatches)
	got[3] = 2
	require.Equal(t, 1, compare(got, want, nil, Tolerance{1e-4, 1e-4}, skip).Mismatches)
}

// TestMaskedScoresFollowTheReference: scores the reference masked before
// a sliding window are skipped as the causal ones are; a score Go masks
// where the reference does not (a window too short) is a mismatch.
func TestMaskedScoresFollowTheReference(t *testing.T) {
	// [H=1, T=3, T=3], a window of 2: query 2 does not see key 0.
	min := float32(-math.MaxFloat32)
	want := []float32{1, min, min, 1, 1, min, min, 1, 1}
	skip := maskedScores([]int{1, 3, 3}, want)
	var masked []int
	for i := range want {
		if skip(i) {
			masked = append(masked, i)
		}
	}
	require.Equal(t, []int{1, 2, 5, 6}, masked)
	got := append([]float32(nil), want...)
	got[6] = 0.5 // Go ignored the window: its probabilities show it
	require.Zero(t, compare(got, want, nil, Tolerance{1e-4, 1e-4}, skip).Mismatches)
	got[3] = min // Go masked a key the reference sees
	require.Equal(t, 1, compare(got, want, nil, Tolerance{1e-4, 1e-4}, skip).Mismatches)
}

func TestParseSelection(t *testing.T) {
	tests := []struct {
		in      string
		want    []int
		wantErr bool
	}{
		{"", []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, false},
		{"4", []int{4}, false},
		{"2-4", []int{2, 3, 4}, false},
		{"1,8-9", []int{1, 8, 9}, false},
		{"0", nil, true},
		{"13", nil, true},
		{"5-3", nil, true},
		{"x", nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			sel, err := ParseSelection(tc.in)
			if tc.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			var got []int
			for n := 1; n <= 12; n++ {
				if sel[n] {
					got = append(got, n)
				}
			}
			require.Equal(t, tc.want, got)
		})
	}
}

func TestParseOverride(t *testing.T) {
	sel, tol, err := ParseOverride("4-5=1e-3,2e-3")
	require.NoError(t, err)
	require.Equal(t, Selection{4: true, 5: true}, sel)
	require.Equal(t, Tolerance{1e-3, 2e-3}, tol)
	for _, bad := range []string{"4", "=1,1", "4=1", "4=-1,0", "4=a,b", "99=1,1"} {
		_, _, err := ParseOverride(bad)
		require.Error(t, err, bad)
	}
}

func TestFloatJSON(t *testing.T) {
	b, err := json.Marshal([]Float{1.5, Float(math.NaN()), Float(math.Inf(1)), Float(math.Inf(-1))})
	require.NoError(t, err)
	require.Equal(t, `[1.5,"NaN","Infinity","-Infinity"]`, string(b))
	var back []Float
	require.NoError(t, json.Unmarshal(b, &back))
	require.True(t, math.IsNaN(float64(back[1])))
	require.True(t, math.IsInf(float64(back[3]), -1))
}
