package tokenizer

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSpecialTrie(t *testing.T) {
	special := []specialToken{
		{text: "<sot>", id: 1},
		{text: "<s", id: 2, user: true},
		{text: "\n\n", id: 3, user: true},
		{text: "\n", id: 4, user: true},
		{text: "<", id: 5},
	}
	sortSpecial(special)
	tr := newSpecialTrie(special)
	for _, c := range []struct {
		text     string
		userOnly bool
		at       int
		id       int32 // -1: none
	}{
		{"ab<sot>", false, 2, 1}, // the longest at the earliest place
		{"ab<sot>", true, 2, 2},  // the longest user-defined one there
		{"ab<x", false, 2, 5},    // a shorter one when the longer breaks off
		{"ab<x", true, -1, -1},   // "<" is not user-defined
		{"x\n\n\ny", true, 1, 3}, // longest first, then again from its end
		{"x<so\n", true, 1, 2},   // a prefix of a control token is still found
		{"plain text", false, -1, -1},
		{"", false, -1, -1},
	} {
		at, k := tr.find(c.text, special, c.userOnly)
		assert.Equal(t, c.at, at, "%q userOnly=%v", c.text, c.userOnly)
		id := int32(-1)
		if k >= 0 {
			id = special[k].id
		}
		assert.Equal(t, c.id, id, "%q userOnly=%v", c.text, c.userOnly)
	}
}
