package checkpoints

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSelectRows: the reference's kept positions picked from a tensor of
// every position, or from one computed at some positions only
// (model.Captured.Rows); a position the model did not compute fails by
// name.
func TestSelectRows(t *testing.T) {
	all := []float32{0, 0, 1, 1, 2, 2, 3, 3} // [4,2]: row r holds r
	for _, tc := range []struct {
		name       string
		data       []float32
		shape      []int
		have, rows []int
		want       []float32
		err        string
	}{
		{"all positions", all, []int{4, 2}, nil, []int{3, 1}, []float32{3, 3, 1, 1}, ""},
		{"all kept", all, []int{4, 2}, nil, nil, all, ""},
		{"computed at some", []float32{1, 1, 3, 3}, []int{2, 2}, []int{1, 3}, []int{3, 1}, []float32{3, 3, 1, 1}, ""},
		{"not computed", []float32{1, 1, 3, 3}, []int{2, 2}, []int{1, 3}, []int{2}, nil, "position 2: the model computed positions [1 3] only"},
		{"reference keeps all", []float32{1, 1, 3, 3}, []int{2, 2}, []int{1, 3}, nil, nil, "the reference keeps all 2"},
		{"outside", all, []int{4, 2}, nil, []int{4}, nil, "row 4 outside the model's 4 positions"},
		{"not a matrix", all, []int{8}, nil, []int{0}, nil, "row subset of a tensor of shape [8]"},
	} {
		got, shape, err := selectRows(tc.data, tc.shape, tc.have, tc.rows)
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, tc.name)
			continue
		}
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.want, got, tc.name)
		require.Equal(t, []int{len(tc.want) / 2, 2}, shape, tc.name)
	}
}
