package server

import "testing"

// TestBreaks: a token's first byte breaks an unfinished character when it
// cannot go on with it, by the maximal-subpart rule of appendLossy.
func TestBreaks(t *testing.T) {
	for _, c := range []struct {
		name       string
		held, next []byte
		want       bool
	}{
		{"nothing held", nil, []byte("a"), false},
		{"a token of no bytes", []byte{0xE2}, nil, false},
		{"a continuation byte", []byte{0xE2}, []byte{0x82, 0xAC}, false},
		{"the last byte", []byte{0xE2, 0x82}, []byte{0xAC, 'x'}, false},
		{"text after a lead byte", []byte{0xEA}, []byte("ttemberg"), true},
		{"a lead byte after a lead byte", []byte{0xE2, 0x82}, []byte{0xE2}, true},
		{"out of the lead's range", []byte{0xE0}, []byte{0x80}, true},
	} {
		if got := breaks(c.held, c.next); got != c.want {
			t.Errorf("%s: breaks(% x, % x) = %v, want %v", c.name, c.held, c.next, got, c.want)
		}
	}
}
