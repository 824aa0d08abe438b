package grammar

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/mail"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPatterns: each pattern's grammar takes the JSON strings whose value
// Go's regexp matches among the examples, and every random string the
// grammar lets a model write decodes to a value the regexp matches.
func TestPatterns(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		yes, no []string
		goRE    string // the pattern in Go's syntax, if it differs
	}{
		{`^[a-z]+$`, []string{"abc", "z"}, []string{"", "aB", "a1"}, ""},
		{`^\d{3}-\d{4}$`, []string{"555-1234"}, []string{"55-1234", "555-12345", "555 1234"}, ""},
		{`^(foo|bar)+x?$`, []string{"foo", "barfoox"}, []string{"x", "fooy", "fo"}, ""},
		{`[a-z]`, []string{"a", "1b2", "x\n"}, []string{"", "12"}, ""},
		{`^x`, []string{"x", "xyz"}, []string{"yx", ""}, ""},
		{`[0-9]$`, []string{"1", "ab1"}, []string{"1a", ""}, ""},
		{`^[^a-c]{2,5}$`, []string{"xyz", "é!"}, []string{"x", "xa", "dddddd"}, ""},
		{`^\w+@\w+\.com$`, []string{"me@here.com"}, []string{"me@here.org", "@x.com"}, ""},
		{`^\s*\.\*$`, []string{".*", " \t.*"}, []string{"x.*", "."}, ""},
		{`^(?:[A-Z][a-z]*)( [A-Z][a-z]*)*$`, []string{"Ann", "Ann Lee"}, []string{"ann", "Ann  Lee"}, ""},
		{`^"\\[\]\-]$`, []string{`"\]`, `"\-`}, []string{`"\x`, `\]`}, ""},
		{`^.{3}$`, []string{"abc", "中文字", "a\tb"}, []string{"ab", "a\nb"}, ""},
		{`^[\d.]+[^\s]?$`, []string{"1.2", "3.x"}, []string{"a", "1 "}, ""},
		{`^a{2}b{1,}c{0,1}d*?$`, []string{"aab", "aabbcddd"}, []string{"ab", "aac"}, ""},
		{`^\u00e9\x41$`, []string{"éA"}, []string{"eA"}, `^é\x41$`}, // Go's regexp has no \u
	} {
		t.Run(tc.pattern, func(t *testing.T) {
			schema, err := json.Marshal(map[string]string{"type": "string", "pattern": tc.pattern})
			require.NoError(t, err)
			g, err := FromJSONSchema(schema)
			require.NoError(t, err)
			re := regexp.MustCompile(cmp.Or(tc.goRE, tc.pattern))
			for _, s := range tc.yes {
				require.True(t, re.MatchString(s), "the example %q", s)
				assert.True(t, g.Matches(marshal(s)), "%q should match\n%s", s, g)
			}
			for _, s := range tc.no {
				require.False(t, re.MatchString(s), "the example %q", s)
				assert.False(t, g.Matches(marshal(s)), "%q should not match\n%s", s, g)
			}
			checkSentences(t, g, func(s string) error {
				if !re.MatchString(s) {
					return fmt.Errorf("does not match %s", tc.pattern)
				}
				return nil
			})
		})
	}
}

// checkSentences decodes 40 random sentences of g as JSON strings and
// checks each with valid.
func checkSentences(t *testing.T, g *Grammar, valid func(string) error) {
	t.Helper()
	r := rand.New(rand.NewPCG(9, 10))
	v := byteVocab()
	for range 40 {
		text := randomSentence(t, g, v, r)
		require.NotNil(t, text, "unfinished")
		var s string
		require.NoError(t, json.Unmarshal(text, &s), "%q", text)
		require.NoError(t, valid(s), "%q", text)
	}
}

// TestFormats: every random string of each format parses with the
// standard library's own reader of it (time.Parse, net/mail) or, for a
// uuid, matches RFC 4122's shape.
func TestFormats(t *testing.T) {
	uuid := regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	parse := func(layout string) func(string) error {
		return func(s string) error { _, err := time.Parse(layout, s); return err }
	}
	for _, tc := range []struct {
		format  string
		valid   func(string) error
		yes, no []string
	}{
		{"date", parse(time.DateOnly), []string{"2024-01-31", "1999-04-30", "2023-02-28"}, []string{"2024-02-30", "2024-04-31", "2024-13-01", "24-01-01"}},
		{"time", parse("15:04:05Z07:00"), []string{"23:59:59Z", "00:00:00.123+05:30"}, []string{"24:00:00Z", "12:00:00", "12:60:00Z"}},
		{"date-time", parse(time.RFC3339), []string{"2024-06-01T12:30:00Z", "2024-06-01T12:30:00.5-07:00"}, []string{"2024-06-01 12:30:00Z", "2024-06-01T12:30Z"}},
		{"uuid", func(s string) error {
			if !uuid.MatchString(s) {
				return fmt.Errorf("not a uuid")
			}
			return nil
		}, []string{"123e4567-e89b-12d3-a456-426614174000"}, []string{"123e4567e89b12d3a456426614174000", "123e4567-e89b-12d3-a456-42661417400g"}},
		{"email", func(s string) error {
			a, err := mail.ParseAddress(s)
			if err == nil && a.Address != s {
				err = fmt.Errorf("read as %q", a.Address)
			}
			return err
		}, []string{"a.b+c@example.co.uk", "x_1@y.io"}, []string{"a@b", "a..b@c.com", ".a@c.com", "a@-b.com", "a b@c.com"}},
	} {
		t.Run(tc.format, func(t *testing.T) {
			g, err := FromJSONSchema([]byte(fmt.Sprintf(`{"type":"string","format":%q}`, tc.format)))
			require.NoError(t, err)
			for _, s := range tc.yes {
				require.NoError(t, tc.valid(s), "the example %q", s)
				assert.True(t, g.Matches(marshal(s)), "%q should match", s)
			}
			for _, s := range tc.no {
				assert.False(t, g.Matches(marshal(s)), "%q should not match", s)
			}
			checkSentences(t, g, tc.valid)
		})
	}
}
