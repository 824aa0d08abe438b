package grammar

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"empty", "", "no rules"},
		{"no root", `a ::= "x"`, "no root rule"},
		{"undefined", `root ::= a`, `rule "a" is used but never defined`},
		{"twice", "root ::= \"a\"\nroot ::= \"b\"", `rule "root" is defined twice`},
		{"left recursion", `root ::= root "a" | "b"`, `rule "root" is left-recursive`},
		{"left recursion through a nullable rule", "root ::= e root \"a\" | \"b\"\ne ::= \"x\"?", `is left-recursive`},
		{"repeated nullable", "root ::= a* \"x\"\na ::= \"y\"?", `is left-recursive`},
		{"unterminated literal", `root ::= "abc`, "line 1 column 14: unterminated literal"},
		{"unterminated class", `root ::= [abc`, "unterminated character class"},
		{"backwards range", `root ::= [z-a]`, "runs backwards"},
		{"bad escape", `root ::= "\q"`, `unknown escape \q`},
		{"short hex", `root ::= "\x4"`, `bad escape \x4"`},
		{"repeats nothing", `root ::= *`, "repeats nothing"},
		{"bad bounds", `root ::= "a"{3,2}`, "is not 0 ≤ m ≤ n"},
		{"huge bounds", `root ::= "a"{5000}`, "is not 0 ≤ m ≤ n ≤ 1000"},
		{"nested too deep", `root ::= ` + strings.Repeat("(", 1001) + `"a"` + strings.Repeat(")", 1001), "groups nested deeper than 1000"},
		{"grows too large", `root ::= "` + strings.Repeat("x", 2000) + `"{1000}`, "grows past 1048576 elements (1000 copies of 2000)"},
		{"missing ::=", `root "a"`, "expected ::="},
		{"unclosed group", `root ::= ("a" | "b"`, "expected )"},
		{"class of nothing", `root ::= [^\x00-\U0010FFFF]`, `the language is empty: rule "root" matches no text (rule "root" has a character class`},
		{"lone surrogate", "root ::= \"a\" x\nx ::= \"\\uD800\"", `the language is empty: rule "root" matches no text (rule "x" has`},
		{"surrogates only", `root ::= [^\x00-\uD7FF\uE000-\U0010FFFF]+`, `the language is empty`},
		{"no end", `root ::= "a" root`, `the language is empty: rule "root" matches no text (every alternative recurses`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.src)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestMatches(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		yes, no   []string
	}{
		{"literal", `root ::= "ab"`, []string{"ab"}, []string{"", "a", "abc", "b"}},
		{"alternatives", `root ::= "a" | "bc" | ""`, []string{"a", "bc", ""}, []string{"b", "ac"}},
		{"class", `root ::= [a-c0-9_]+`, []string{"a", "b09_c"}, []string{"", "d", "a-"}},
		{"negated class", `root ::= [^a-c\n]*`, []string{"", "xyz", "é😀"}, []string{"a", "x\n"}},
		{"star plus question", `root ::= "a"* "b"+ "c"?`, []string{"b", "aabbb", "bc"}, []string{"", "a", "cb", "bcc"}},
		{"bounds", `root ::= "x"{2} "y"{1,3} "z"{2,}`, []string{"xxyzz", "xxyyyzzzz"}, []string{"xyzz", "xxyyyyzz", "xxyz"}},
		{"zero bound", `root ::= "a"{0} "b"`, []string{"b"}, []string{"ab"}},
		{"groups and refs", "root ::= item (\",\" item)*\nitem ::= [0-9]+ | \"(\" root \")\"", []string{"1", "1,(2,3),4", "((7))"}, []string{"", "1,", "(1", "1,,2"}},
		{"escapes", `root ::= "\x41\u00e9\n\"\\" [\]\-]`, []string{"Aé\n\"\\]", "Aé\n\"\\-"}, []string{"Ae\n\"\\]"}},
		{"multibyte", `root ::= "é" [一-龥] [\U0001F600-\U0001F64F]`, []string{"é中😀"}, []string{"e中😀", "é中a"}},
		{"comments and newlines", "# a comment\nroot ::= (\n  \"a\" # first\n  | \"b\"\n)\n\n", []string{"a", "b"}, []string{"ab"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := Parse(tc.src)
			require.NoError(t, err)
			for _, s := range tc.yes {
				assert.True(t, g.Matches([]byte(s)), "%q should match", s)
			}
			for _, s := range tc.no {
				assert.False(t, g.Matches([]byte(s)), "%q should not match", s)
			}
		})
	}
}

// TestUTF8 checks that a character split over bytes waits whole, and that
// invalid encodings are refused even where a negated class takes anything.
func TestUTF8(t *testing.T) {
	g, err := Parse(`root ::= [^x]*`)
	require.NoError(t, err)
	m := g.NewMatcher()
	require.NoError(t, m.Accept([]byte{0xE4})) // 中 starts E4 B8 AD
	assert.False(t, m.Complete(), "half a character is not a whole text")
	require.NoError(t, m.Accept([]byte{0xB8, 0xAD}))
	assert.True(t, m.Complete())
	for _, bad := range [][]byte{{0xC0, 0x80}, {0xED, 0xA0, 0x80}, {0xF5}, {0x80}, {0xE4, 0x41}, {0xF4, 0x90, 0x80, 0x80}} {
		assert.Error(t, g.NewMatcher().Accept(bad), "% x", bad)
	}
	// A lead byte whose characters the grammar cannot take is refused at once.
	ascii, err := Parse(`root ::= [a-z]*`)
	require.NoError(t, err)
	assert.Error(t, ascii.NewMatcher().Accept([]byte{0xE4}))
	for _, lead := range []byte{0xC2, 0xE0, 0xF0} { // the least code points they start are above 'z'
		assert.Error(t, ascii.NewMatcher().Accept([]byte{lead}), "% x", lead)
	}
	assert.NoError(t, ascii.NewMatcher().Accept([]byte("abc")))
}

// TestAcceptLeavesStateOnError: a refused token does not move the matcher.
func TestAcceptLeavesStateOnError(t *testing.T) {
	g, err := Parse(`root ::= "ab" "c"`)
	require.NoError(t, err)
	m := g.NewMatcher()
	require.NoError(t, m.Accept([]byte("a")))
	require.Error(t, m.Accept([]byte("bx")))
	require.NoError(t, m.Accept([]byte("bc")))
	assert.True(t, m.Complete())
}

// TestMaskMatchesBruteForce: the trie walk allows exactly the tokens a
// fresh matcher accepts one by one, at every step of random texts.
func TestMaskMatchesBruteForce(t *testing.T) {
	tokens := [][]byte{
		[]byte(`{`), []byte(`}`), []byte(`{"`), []byte(`"`), []byte(`":`), []byte(` `), []byte(`\n`), []byte("\n"),
		[]byte(`name`), []byte(`age`), []byte(`1`), []byte(`23`), []byte(`-`), []byte(`.5`), []byte(`e`), []byte(`true`),
		[]byte(`tr`), []byte(`ue`), []byte(`null`), []byte(`,`), []byte(`[`), []byte(`]`), []byte(`"}`), []byte(`a"`),
		{0xE4}, {0xB8, 0xAD}, {0xE4, 0xB8, 0xAD}, []byte(`\u00e9`), []byte(`\`), []byte(`u`), nil, []byte(`<eos>`), []byte(`:`), []byte(`tags`), []byte(`ta`), []byte(`gs`), []byte(`false`),
		[]byte(`0`), []byte(`5`), []byte(`18`), []byte(`120`), []byte(`-0`), []byte(`@`), []byte(`.com`), []byte(`ab`), []byte(`2024`), []byte(`-`), []byte(`T`),
		[]byte(`Z`), []byte(`AB`), []byte(`C-`), []byte(`12`), []byte(`1`), []byte(`01`), []byte(`-12`), []byte(`:00`), []byte(`e4`),
	}
	const eos = 31
	v := NewVocab(tokens, []int{eos}, nil)
	for i, schema := range []string{
		`{"type":"object","properties":{"name":{"type":"string","maxLength":6},"age":{"type":"integer"},"tags":{"type":"array","items":{"type":"boolean"},"maxItems":2}},"required":["name"],"additionalProperties":false}`,
		`{"type":"array","items":{"anyOf":[{"type":"integer","exclusiveMinimum":0},{"type":"integer","minimum":-120,"maximum":-18},{"type":"number","minimum":0,"exclusiveMaximum":5}]},"maxItems":3}`,
		`{"type":"array","items":{"anyOf":[{"type":"string","format":"email"},{"type":"string","format":"date-time"},{"type":"string","format":"uuid"}]},"maxItems":2}`,
		`{"type":"array","items":{"anyOf":[{"type":"string","pattern":"^[A-Z]{2,3}-\\d+$"},{"enum":["ab",12,"x"],"type":"string"},{"allOf":[{"type":"integer"}],"maximum":120}]},"maxItems":3}`,
	} {
		g, err := FromJSONSchema([]byte(schema))
		require.NoError(t, err, schema)
		trials := 40
		if i > 0 {
			trials = 10 // the probes start over for every token and step
		}
		maskMatchesBruteForce(t, g, v, tokens, eos, trials)
	}
}

func maskMatchesBruteForce(t *testing.T, g *Grammar, v *Vocab, tokens [][]byte, eos, trials int) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range trials {
		m := g.NewMatcher()
		var text []byte
		for step := 0; step < 40; step++ {
			mask := m.Mask(v)
			var allowed []int
			for id, tok := range tokens {
				want := false
				if id == eos {
					want = m.Complete()
				} else if len(tok) > 0 {
					probe := g.NewMatcher()
					want = probe.Accept(append(append([]byte(nil), text...), tok...)) == nil
				}
				require.Equal(t, want, Allowed(mask, id), "trial %d step %d, after %q, token %q", trial, step, text, tok)
				if want {
					allowed = append(allowed, id)
				}
			}
			if len(allowed) == 0 {
				t.Fatalf("trial %d: nothing allowed after %q", trial, text)
			}
			id := allowed[r.IntN(len(allowed))]
			if id == eos {
				break
			}
			require.NoError(t, m.Accept(tokens[id]))
			text = append(text, tokens[id]...)
		}
	}
}

// TestJSONObject: json_object's grammar takes JSON objects and nothing else.
func TestJSONObject(t *testing.T) {
	g := JSONObject()
	for _, s := range []string{`{}`, `{"a": 1}`, `{"a":[1,2.5,-3e-7,true,null,"x\"y\u00e9"],"b":{"c":{}}}`, "{\n  \"a\": \"中\"\n}"} {
		assert.True(t, g.Matches([]byte(s)), s)
	}
	for _, s := range []string{``, `[]`, `"x"`, `{"a"}`, `{"a":01}`, `{a:1}`, `{"a":1,}`, `{"a":"\x"}`, "{\"a\":\"\x01\"}", `{"a":1e123}`} {
		assert.False(t, g.Matches([]byte(s)), s)
	}
	// Whitespace is bounded, so a model cannot pad forever.
	assert.False(t, g.Matches([]byte("{"+strings.Repeat(" ", 2)+"}")))
	assert.True(t, g.Matches([]byte("{\n"+strings.Repeat(" ", 20)+"}")))
	assert.False(t, g.Matches([]byte("{\n"+strings.Repeat(" ", 21)+"}")))
}

// TestRepetitionReachesOneState: a repetition's every turn is the same
// state, so a long string interns no more stacks or states than a short
// one (before the tail call, each character pushed one more node and
// every step walked the chain: quadratic in the string's length).
func TestRepetitionReachesOneState(t *testing.T) {
	for _, src := range []string{`{"type":"string"}`, `{"type":"array","items":{"type":"integer"}}`, `{"type":"object","additionalProperties":{"type":"boolean"}}`} {
		g, err := FromJSONSchema([]byte(src))
		require.NoError(t, err)
		grow := func(n int) (nodes, states int) {
			m := g.NewMatcher()
			var text string
			switch src[9] {
			case 's':
				text = `"` + strings.Repeat("ab", n)
			case 'a':
				text = `[1` + strings.Repeat(", 23", n)
			default:
				text = `{"a":true` + strings.Repeat(`, "b": false`, n)
			}
			require.NoError(t, m.Accept([]byte(text)), src)
			return len(m.nodes), len(m.states)
		}
		n10, s10 := grow(10)
		n1000, s1000 := grow(1000)
		assert.Equal(t, n10, n1000, "%s: stacks interned", src)
		assert.Equal(t, s10, s1000, "%s: states interned", src)
	}
}

// TestUnproductivePruned: an alternative that can match no text is never
// entered, so the mask never leaves a text with nothing to take.
func TestUnproductivePruned(t *testing.T) {
	g, err := Parse("root ::= \"a\" x | \"b\" (\"c\" | [^\\x00-\\U0010FFFF])\nx ::= [\\uD800-\\uDFFF]")
	require.NoError(t, err)
	assert.True(t, g.Matches([]byte("bc")))
	assert.Error(t, g.NewMatcher().Accept([]byte("a")), "a leads only to a class of nothing")
	v := NewVocab([][]byte{[]byte("a"), []byte("b"), []byte("c"), nil}, []int{3}, nil)
	m := g.NewMatcher()
	assert.Equal(t, []uint64{0b10}, m.Mask(v))
	require.NoError(t, m.Accept([]byte("b")))
	assert.Equal(t, []uint64{0b100}, m.Mask(v))
}

// TestViable: Viable says whether bytes can continue the text, as Accept
// would, and leaves the text where it was.
func TestViable(t *testing.T) {
	g, err := Parse(`root ::= "ab" | "€"`)
	require.NoError(t, err)
	m := g.NewMatcher()
	for _, c := range []struct {
		b  string
		ok bool
	}{{"a", true}, {"ab", true}, {"abc", false}, {"b", false}, {"\xe2", true}, {"€", true}, {"\xe2\x82\xad", false}, {"", true}} {
		require.Equal(t, c.ok, m.Viable([]byte(c.b)), "%q", c.b)
	}
	require.False(t, m.Complete(), "Viable does not advance the text")
	require.NoError(t, m.Accept([]byte("a")))
	require.True(t, m.Viable([]byte("b")))
	require.False(t, m.Viable([]byte("a")))
}
