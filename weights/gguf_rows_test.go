package weights

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// RopeRow is pytorch/gguf_write.py's permute: row h·D + 2i + j of the file
// is HF's row h·D + j·D/2 + i.
func TestRopeRow(t *testing.T) {
	const heads, D = 2, 6
	var got []int
	for r := range heads * D {
		got = append(got, RopeRow(r, heads*D, heads))
	}
	// HF rows 0,1,2 (first half of head 0) go to 0,2,4; 3,4,5 to 1,3,5.
	assert.Equal(t, []int{0, 2, 4, 1, 3, 5, 6, 8, 10, 7, 9, 11}, got)
	assert.Equal(t, 5, RopeRow(5, 12, 0), "unpermuted")
}
