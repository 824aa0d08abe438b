package generation

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStopMatcher(t *testing.T) {
	tests := []struct {
		name    string
		stops   []string
		pieces  []string
		outs    []string // released per piece; the last piece's out is final
		matched string
	}{
		{"no stops releases everything", nil, []string{"ab", "c"}, []string{"ab", "c"}, ""},
		{"straddling", []string{"bc"}, []string{"ab", "cd"}, []string{"a", ""}, "bc"},
		{"held then abandoned", []string{"bx"}, []string{"ab", "cd"}, []string{"a", "bcd"}, ""},
		{"self-overlapping stop", []string{"abab"}, []string{"aab", "ab"}, []string{"a", ""}, "abab"},
		{"longest possible start is held", []string{"abab"}, []string{"xaba", "bab"}, []string{"x", ""}, "abab"},
		{"at the very start", []string{"He"}, []string{"Hello"}, []string{""}, "He"},
		{"earliest occurrence wins", []string{"cd", "b"}, []string{"abcd"}, []string{"a"}, "b"},
		{"same position: first listed wins", []string{"bc", "b"}, []string{"abcd"}, []string{"a"}, "bc"},
		{"multibyte", []string{"éé"}, []string{"aé", "éb"}, []string{"a", ""}, "éé"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := stopMatcher{stops: tt.stops}
			var matched string
			for i, p := range tt.pieces {
				var out string
				out, matched = m.feed(p)
				require.Equal(t, tt.outs[i], out, "piece %d", i)
				if matched != "" {
					require.Equal(t, len(tt.pieces)-1, i, "matched early")
				}
			}
			require.Equal(t, tt.matched, matched)
		})
	}
}

// TestStopMatcherAnySplit: however the text is split into pieces, what is
// released is exactly the text before the first stop string (or all of it).
func TestStopMatcherAnySplit(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "b", "c", "é"}
	for range 2000 {
		var text strings.Builder
		for range 1 + r.IntN(12) {
			text.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		s := text.String()
		stops := []string{alphabet[r.IntN(3)] + alphabet[r.IntN(4)] + alphabet[r.IntN(3)], alphabet[r.IntN(4)] + alphabet[r.IntN(4)]}
		want, wantMatch := s, ""
		for _, st := range stops {
			if i := strings.Index(s, st); i >= 0 && i < len(want) {
				want, wantMatch = s[:i], st
			}
		}
		m := stopMatcher{stops: stops}
		var got strings.Builder
		matched := ""
		for rest := s; rest != "" && matched == ""; {
			n := 1 + r.IntN(len(rest))
			for n < len(rest) && !isCharStart(rest[n]) {
				n++
			}
			var out string
			out, matched = m.feed(rest[:n])
			got.WriteString(out)
			rest = rest[n:]
		}
		if matched == "" {
			got.WriteString(m.flush())
		}
		require.Equal(t, want, got.String(), "text %q stops %q", s, stops)
		if wantMatch != "" {
			require.Equal(t, s[len(want):len(want)+len(matched)], matched)
		}
	}
}

func isCharStart(b byte) bool { return b&0xc0 != 0x80 }
