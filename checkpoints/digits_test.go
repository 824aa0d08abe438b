package checkpoints

import (
	"bytes"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGotWantDiffer: got and want print with enough digits that different
// values never look the same (probe once showed -109.912 against -109.912),
// and with six when they need no more.
func TestGotWantDiffer(t *testing.T) {
	tests := []struct {
		got, want           float64
		wantGot, wantWanted string
	}{
		{-109.9123, -109.9118, "-109.9123", "-109.9118"},
		{-109.91231, -109.91232, "-109.91231", "-109.91232"},
		{1.5, 2.5, "1.5", "2.5"},
		{0.1234567, 0.1234567, "0.123457", "0.123457"},
		{1, math.Nextafter(1, 2), "1", "1.0000000000000002"},
		{float64(float32(0.1)), 0.1, "0.100000001", "0.1"},
		{math.NaN(), 0.5, "NaN", "0.5"},
	}
	for _, tc := range tests {
		e := &Element{Got: Float(tc.got), Want: Float(tc.want)}
		require.Equal(t, tc.wantGot, e.got(), "got of %v vs %v", tc.got, tc.want)
		require.Equal(t, tc.wantWanted, e.want(), "want of %v vs %v", tc.got, tc.want)
		if tc.got != tc.want {
			require.NotEqual(t, e.got(), e.want())
		}
	}

	// The failures table and the JUnit line show them.
	layer := 3
	r := &Report{Results: []Result{{Checkpoint: 9, CheckpointName: "Selected logits", Name: "loglikelihood", Case: "c", Layer: &layer,
		Status: StatusFailed, Compared: 1, Mismatches: 1, MaxAbsErr: 5e-4,
		Worst: &Element{Index: []int{0}, Axes: []string{"pair"}, Got: -109.9123, Want: -109.9118}}}}
	var b bytes.Buffer
	require.NoError(t, r.writeFailures(&b))
	require.Contains(t, b.String(), "-109.9123")
	require.Contains(t, b.String(), "-109.9118")
	require.Contains(t, r.Results[0].failureLine(), "got -109.9123, want -109.9118")
}
