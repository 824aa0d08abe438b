package grammar

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// patternRule is GBNF for the inside of a JSON string (its characters as
// JSON writes them) whose value matches the regular expression src, as a
// JSON schema's pattern means it: anywhere in the string unless anchored
// by ^ and $. The subset is llama.cpp's: literals and escapes, ., classes
// ([a-z], [^...], \d \w \s and their negations), groups ((...), (?:...)),
// alternation, and the repetitions ? * + {m} {m,} {m,n}. What else a
// regular expression may hold (lookarounds, backreferences, \b, anchors
// inside) is an error naming it. Characters a JSON string must escape are
// written escaped; control characters other than \t \n \r \f \b are left
// out, so every text is one the pattern matches.
func patternRule(src string) (string, error) {
	p := &regexParser{src: []rune(src)}
	start, end := false, false
	if len(p.src) > 0 && p.src[0] == '^' {
		p.src, start = p.src[1:], true
	}
	if n := len(p.src); n > 0 && p.src[n-1] == '$' && (n < 2 || p.src[n-2] != '\\') {
		p.src, end = p.src[:n-1], true
	}
	body, err := p.alternatives(0)
	if err != nil {
		return "", err
	}
	if p.pos < len(p.src) {
		return "", p.errorf("unmatched )")
	}
	if !start {
		body = "char* " + body
	}
	if !end {
		body += " char*"
	}
	return body, nil
}

type regexParser struct {
	src []rune
	pos int
}

func (p *regexParser) errorf(format string, args ...any) error {
	return p.errorAt(p.pos, format, args...)
}

func (p *regexParser) errorAt(pos int, format string, args ...any) error {
	return fmt.Errorf("pattern at character %d: %s", pos+1, fmt.Sprintf(format, args...))
}

func (p *regexParser) alternatives(depth int) (string, error) {
	if depth > maxNesting {
		return "", p.errorf("groups nested deeper than %d", maxNesting)
	}
	var alts []string
	for {
		seq, err := p.sequence(depth)
		if err != nil {
			return "", err
		}
		alts = append(alts, seq)
		if p.pos < len(p.src) && p.src[p.pos] == '|' {
			p.pos++
			continue
		}
		return "(" + strings.Join(alts, " | ") + ")", nil
	}
}

func (p *regexParser) sequence(depth int) (string, error) {
	var items []string
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		var item string
		switch c {
		case '|', ')':
			return seqOf(items), nil
		case '(':
			p.pos++
			if p.pos < len(p.src) && p.src[p.pos] == '?' {
				if p.pos+1 < len(p.src) && p.src[p.pos+1] == ':' {
					p.pos += 2
				} else {
					return "", p.errorf("the group (?%s is not supported (only (...) and (?:...))", string(p.src[p.pos+1:min(p.pos+2, len(p.src))]))
				}
			}
			body, err := p.alternatives(depth + 1)
			if err != nil {
				return "", err
			}
			if p.pos >= len(p.src) || p.src[p.pos] != ')' {
				return "", p.errorf("unclosed (")
			}
			p.pos++
			item = body
		case '[':
			set, err := p.class()
			if err != nil {
				return "", err
			}
			item = set.gbnf()
		case '.':
			p.pos++
			item = runeSet{0, '\n' - 1, '\n' + 1, utf8.MaxRune}.gbnf()
		case '^', '$':
			return "", p.errorf("the anchor %c is supported only at the pattern's start (^) and end ($)", c)
		case '*', '+', '?', '{':
			return "", p.errorf("%c repeats nothing", c)
		case '\\':
			set, err := p.escape(false)
			if err != nil {
				return "", err
			}
			item = set.gbnf()
		default:
			p.pos++
			item = runeSet{c, c}.gbnf()
		}
		item, err := p.quantifier(item)
		if err != nil {
			return "", err
		}
		items = append(items, item)
	}
	return seqOf(items), nil
}

func seqOf(items []string) string {
	if len(items) == 0 {
		return `""`
	}
	return strings.Join(items, " ")
}

// quantifier reads a repetition after item, if any.
func (p *regexParser) quantifier(item string) (string, error) {
	if p.pos >= len(p.src) {
		return item, nil
	}
	lo, hi := 0, -1
	switch p.src[p.pos] {
	case '*':
	case '+':
		lo = 1
	case '?':
		hi = 1
	case '{':
		end := slices.Index(p.src[p.pos:], '}')
		if end < 0 {
			return "", p.errorf("unclosed {")
		}
		spec := string(p.src[p.pos+1 : p.pos+end])
		a, b, comma := strings.Cut(spec, ",")
		var err1, err2 error
		lo, err1 = strconv.Atoi(a)
		hi = lo
		if comma {
			hi = -1
			if b != "" {
				hi, err2 = strconv.Atoi(b)
			}
		}
		if err1 != nil || err2 != nil || lo > maxRepeat || hi > maxRepeat || hi >= 0 && hi < lo {
			return "", p.errorf("the repetition {%s} is not {m}, {m,} or {m,n} with 0 ≤ m ≤ n ≤ %d", spec, maxRepeat)
		}
		p.pos += end
	default:
		return item, nil
	}
	p.pos++
	if p.pos < len(p.src) && p.src[p.pos] == '?' { // lazy: the same strings
		p.pos++
	} else if p.pos < len(p.src) && p.src[p.pos] == '+' {
		return "", p.errorf("possessive repetitions are not supported")
	}
	return repeat("("+item+")", lo, hi), nil
}

// class reads a [character class] into the set of runes it matches.
func (p *regexParser) class() (runeSet, error) {
	p.pos++ // [
	negate := p.pos < len(p.src) && p.src[p.pos] == '^'
	if negate {
		p.pos++
	}
	var set runeSet
	first := true
	for {
		if p.pos >= len(p.src) {
			return nil, p.errorf("unclosed [")
		}
		c := p.src[p.pos]
		if c == ']' && !first {
			p.pos++
			break
		}
		first = false
		var lo runeSet
		var err error
		if c == '\\' {
			if lo, err = p.escape(true); err != nil {
				return nil, err
			}
		} else {
			if c == '[' && p.pos+1 < len(p.src) && p.src[p.pos+1] == ':' {
				return nil, p.errorf("POSIX classes [:name:] are not supported")
			}
			p.pos++
			lo = runeSet{c, c}
		}
		if len(lo) == 2 && lo[0] == lo[1] && p.pos+1 < len(p.src) && p.src[p.pos] == '-' && p.src[p.pos+1] != ']' {
			p.pos++
			var hi runeSet
			if p.src[p.pos] == '\\' {
				if hi, err = p.escape(true); err != nil {
					return nil, err
				}
			} else {
				hi = runeSet{p.src[p.pos], p.src[p.pos]}
				p.pos++
			}
			if len(hi) != 2 || hi[0] != hi[1] || hi[0] < lo[0] {
				return nil, p.errorf("the range %c-... in a class is not a range of characters", lo[0])
			}
			lo = runeSet{lo[0], hi[0]}
		}
		set = append(set, lo...)
	}
	set = set.normal()
	if negate {
		set = set.complement()
	}
	return set, nil
}

// escape reads a backslash escape: a character, or a class (\d \w \s and
// their negations).
func (p *regexParser) escape(inClass bool) (runeSet, error) {
	at := p.pos
	p.pos++
	if p.pos >= len(p.src) {
		return nil, p.errorf("a pattern cannot end in \\")
	}
	c := p.src[p.pos]
	p.pos++
	one := func(r rune) (runeSet, error) { return runeSet{r, r}, nil }
	switch c {
	case 'd', 'D', 'w', 'W', 's', 'S':
		set := map[rune]runeSet{'d': {'0', '9'}, 'w': {'0', '9', 'A', 'Z', '_', '_', 'a', 'z'}, 's': {'\t', '\n', '\f', '\r', ' ', ' '}}[c|0x20].normal()
		if c < 'a' {
			set = set.complement()
		}
		return set, nil
	case 'n':
		return one('\n')
	case 't':
		return one('\t')
	case 'r':
		return one('\r')
	case 'f':
		return one('\f')
	case 'v':
		return one('\v')
	case '0':
		return one(0)
	case 'x', 'u':
		n := map[rune]int{'x': 2, 'u': 4}[c]
		if p.pos+n > len(p.src) {
			return nil, p.errorf("\\%c needs %d hex digits", c, n)
		}
		v, err := strconv.ParseUint(string(p.src[p.pos:p.pos+n]), 16, 32)
		if err != nil {
			return nil, p.errorf("bad escape \\%c%s", c, string(p.src[p.pos:p.pos+n]))
		}
		p.pos += n
		return one(rune(v))
	case 'b':
		if inClass {
			return one('\b')
		}
	}
	if c < utf8.RuneSelf && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
		return nil, p.errorAt(at, "the escape \\%c is not supported (word boundaries, backreferences and named classes are not)", c)
	}
	return one(c) // an escaped punctuation character stands for itself
}

// runeSet is a set of code points as inclusive [lo, hi] pairs.
type runeSet []rune

// normal sorts and merges the pairs.
func (s runeSet) normal() runeSet {
	type pair struct{ lo, hi rune }
	ps := make([]pair, 0, len(s)/2)
	for i := 0; i < len(s); i += 2 {
		ps = append(ps, pair{s[i], s[i+1]})
	}
	slices.SortFunc(ps, func(a, b pair) int { return int(a.lo - b.lo) })
	var out runeSet
	for _, q := range ps {
		if n := len(out); n > 0 && q.lo <= out[n-1]+1 {
			out[n-1] = max(out[n-1], q.hi)
			continue
		}
		out = append(out, q.lo, q.hi)
	}
	return out
}

// complement is every code point not in the (normal) set.
func (s runeSet) complement() runeSet {
	var out runeSet
	next := rune(0)
	for i := 0; i < len(s); i += 2 {
		if s[i] > next {
			out = append(out, next, s[i]-1)
		}
		next = s[i+1] + 1
	}
	if next <= utf8.MaxRune {
		out = append(out, next, utf8.MaxRune)
	}
	return out
}

func (s runeSet) has(r rune) bool {
	for i := 0; i < len(s); i += 2 {
		if s[i] <= r && r <= s[i+1] {
			return true
		}
	}
	return false
}

// jsonEscapes are the characters a JSON string writes escaped here.
var jsonEscapes = []struct {
	r   rune
	esc string
}{{'"', `"\\\""`}, {'\\', `"\\\\"`}, {'\n', `"\\n"`}, {'\t', `"\\t"`}, {'\r', `"\\r"`}, {'\f', `"\\f"`}, {'\b', `"\\b"`}}

// gbnf is the set as GBNF over a JSON string's text: the characters it
// may hold as they are, and those it must escape escaped; other control
// characters are left out.
func (s runeSet) gbnf() string {
	unsafe := runeSet{0, 0x1F, '"', '"', '\\', '\\', 0x7F, 0x7F}.normal()
	var raw runeSet
	for i := 0; i < len(s); i += 2 {
		raw = append(raw, s[i], s[i+1])
	}
	raw = raw.minus(unsafe)
	var alts []string
	if len(raw) > 0 {
		var b strings.Builder
		b.WriteByte('[')
		for i := 0; i < len(raw); i += 2 {
			b.WriteString(classChar(raw[i]))
			if raw[i+1] != raw[i] {
				b.WriteString("-" + classChar(raw[i+1]))
			}
		}
		b.WriteByte(']')
		alts = append(alts, b.String())
	}
	for _, e := range jsonEscapes {
		if s.has(e.r) {
			alts = append(alts, e.esc)
		}
	}
	if len(alts) == 0 {
		return `[^\x00-\U0010FFFF]` // nothing: pruned, or the grammar's language is empty
	}
	if len(alts) == 1 {
		return alts[0]
	}
	return "(" + strings.Join(alts, " | ") + ")"
}

// minus is the (normal) set without the code points of t (normal).
func (s runeSet) minus(t runeSet) runeSet {
	return append(s.complement(), t...).normal().complement()
}

// classChar writes r inside a GBNF class.
func classChar(r rune) string {
	switch {
	case r == ']' || r == '[' || r == '\\' || r == '-' || r == '^' || r == '"':
		return `\` + string(r)
	case r < 0x20 || r == 0x7F || r >= 0xD800 && r <= 0xDFFF || r > 0xFFFF:
		return fmt.Sprintf(`\U%08X`, r)
	case r > 0x7E:
		return fmt.Sprintf(`\u%04X`, r)
	}
	return string(r)
}
