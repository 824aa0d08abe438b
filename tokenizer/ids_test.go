package tokenizer

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseIDs(t *testing.T) {
	cases := []struct {
		in   string
		want []int
		err  string
	}{
		{"15496 995", []int{15496, 995}, ""},
		{" 15496,995\n50256\r\n", []int{15496, 995, 50256}, ""},
		{"[15496, 995]", []int{15496, 995}, ""},
		{"", []int{}, ""},
		{"-1", []int{-1}, ""}, // range is Decode's business
		{"12 abc", nil, `"abc" is not an integer`},
		{"[1, 2.5]", nil, "not a JSON array of integers"},
		{"1.0", nil, `"1.0" is not an integer`},
	}
	for _, c := range cases {
		got, err := ParseIDs(c.in)
		if c.err != "" {
			require.Error(t, err, "%q", c.in)
			assert.ErrorIs(t, err, ErrInvalidID)
			assert.Contains(t, err.Error(), c.err)
			continue
		}
		require.NoError(t, err, "%q", c.in)
		assert.Equal(t, c.want, got, "%q", c.in)
	}
}

func TestFormatIDs(t *testing.T) {
	assert.Equal(t, "15496 995", FormatIDs([]int{15496, 995}, false))
	assert.Equal(t, "[15496, 995]", FormatIDs([]int{15496, 995}, true))
	assert.Equal(t, "", FormatIDs(nil, false))
	assert.Equal(t, "[]", FormatIDs(nil, true))
	ids, err := ParseIDs(FormatIDs([]int{1, 2, 3}, true))
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2, 3}, ids)
}
