package main

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestReflow(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"short", "a  b\nc", "a b c"},
		{"empty", " \n ", ""},
		{"one long word", strings.Repeat("x", 90), strings.Repeat("x", 90)},
	} {
		require.Equal(t, tc.want, reflow(tc.in), tc.name)
	}
	long := reflow(strings.Repeat("wörd ", 40))
	for _, line := range strings.Split(long, "\n") {
		require.LessOrEqual(t, utf8.RuneCountInString(line), 78, line)
	}
	require.Equal(t, strings.Fields(strings.Repeat("wörd ", 40)), strings.Fields(long), "no word lost")
}

func TestAndList(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{{nil, ""}, {[]string{"a"}, "a"}, {[]string{"a", "b"}, "a and b"}, {[]string{"a", "b", "c"}, "a, b and c"}} {
		require.Equal(t, tc.want, andList(tc.in))
	}
}
