package grammar

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Grammar is a compiled context-free grammar, immutable and safe to share.
// Rules are lists of alternatives; each alternative is a run of elements
// in elems ending with an end element, as llama.cpp lays out its rules.
type Grammar struct {
	names []string
	alts  [][]int32 // rule -> the elems index of each alternative's first element
	elems []elem
	root  int32
	src   string
}

type elemKind uint8

const (
	elemEnd  elemKind = iota // the end of an alternative
	elemChar                 // one code point in ranges (or not, if negated)
	elemRef                  // the rule numbered rule
)

type elem struct {
	kind   elemKind
	negate bool
	rule   int32
	ranges []rune // inclusive [lo, hi] pairs
}

// matches reports whether code point r is in a char element's set.
func (e *elem) matches(r rune) bool {
	in := false
	for i := 0; i < len(e.ranges); i += 2 {
		if e.ranges[i] <= r && r <= e.ranges[i+1] {
			in = true
			break
		}
	}
	return in != e.negate
}

// overlaps reports whether some code point of [lo, hi] is in the set.
func (e *elem) overlaps(lo, hi rune) bool {
	if !e.negate {
		for i := 0; i < len(e.ranges); i += 2 {
			if e.ranges[i] <= hi && lo <= e.ranges[i+1] {
				return true
			}
		}
		return false
	}
	// Negated: some point of [lo, hi] outside every range.
	for r := lo; r <= hi; {
		covered := false
		for i := 0; i < len(e.ranges); i += 2 {
			if e.ranges[i] <= r && r <= e.ranges[i+1] {
				r, covered = e.ranges[i+1]+1, true
				break
			}
		}
		if !covered {
			return true
		}
	}
	return false
}

// String is the grammar's GBNF source.
func (g *Grammar) String() string { return g.src }

// Parse compiles GBNF text (llama.cpp's grammars/README.md): rules
// `name ::= alternatives`, alternatives separated by |, sequences of
// "literals", [character classes] ([^...] negated, ranges a-z, escapes
// \n \t \r \\ \" \] \xHH \uHHHH \UHHHHHHHH), rule names, (groups), the
// repetitions * + ? {m} {m,} {m,n}, and # comments. The start rule is
// root. Undefined rules, left recursion and malformed text are errors
// naming the line and column.
func Parse(src string) (*Grammar, error) {
	p := &parser{src: src, g: &Grammar{src: src}, ids: map[string]int32{}, defined: map[string]bool{}}
	if err := p.grammar(); err != nil {
		return nil, err
	}
	for name, id := range p.ids {
		if !p.defined[name] {
			return nil, fmt.Errorf("grammar: rule %q is used but never defined", name)
		}
		_ = id
	}
	root, ok := p.ids["root"]
	if !ok {
		return nil, fmt.Errorf("grammar: no root rule (the start rule is named root)")
	}
	p.g.root = root
	if err := p.g.checkLeftRecursion(); err != nil {
		return nil, err
	}
	if err := p.g.pruneUnproductive(); err != nil {
		return nil, err
	}
	return p.g, nil
}

type parser struct {
	src     string
	pos     int
	g       *Grammar
	ids     map[string]int32
	defined map[string]bool
	gen     int // generated rules, for repetitions and groups
	depth   int // of the group being read
}

// maxNesting bounds groups within groups (the parser recurses on each).
const maxNesting = 1000

func (p *parser) errorf(format string, args ...any) error {
	line, col := 1, 1
	for _, r := range p.src[:min(p.pos, len(p.src))] {
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return fmt.Errorf("grammar: line %d column %d: %s", line, col, fmt.Sprintf(format, args...))
}

// id returns the number of rule name, creating it (undefined) if new.
func (p *parser) id(name string) int32 {
	if id, ok := p.ids[name]; ok {
		return id
	}
	id := int32(len(p.g.names))
	p.ids[name] = id
	p.g.names = append(p.g.names, name)
	p.g.alts = append(p.g.alts, nil)
	return id
}

// define sets rule id's alternatives, each a sequence of elements.
func (p *parser) define(id int32, alts [][]elem) {
	p.defined[p.g.names[id]] = true
	for _, seq := range alts {
		p.g.alts[id] = append(p.g.alts[id], int32(len(p.g.elems)))
		p.g.elems = append(p.g.elems, seq...)
		p.g.elems = append(p.g.elems, elem{kind: elemEnd})
	}
}

// fresh defines a generated rule and returns a reference to it.
func (p *parser) fresh(base string, alts [][]elem) elem {
	p.gen++
	id := p.id(fmt.Sprintf("%s-%d", base, p.gen))
	p.define(id, alts)
	return elem{kind: elemRef, rule: id}
}

// space skips blanks and comments; newlines too if nl.
func (p *parser) space(nl bool) {
	for p.pos < len(p.src) {
		switch c := p.src[p.pos]; {
		case c == ' ' || c == '\t' || c == '\r':
			p.pos++
		case c == '\n' && nl:
			p.pos++
		case c == '#':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' {
				p.pos++
			}
		default:
			return
		}
	}
}

func isNameByte(c byte) bool {
	return c == '-' || c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func (p *parser) name() string {
	start := p.pos
	for p.pos < len(p.src) && isNameByte(p.src[p.pos]) {
		p.pos++
	}
	return p.src[start:p.pos]
}

func (p *parser) grammar() error {
	p.space(true)
	if p.pos == len(p.src) {
		return p.errorf("no rules")
	}
	for p.pos < len(p.src) {
		name := p.name()
		if name == "" {
			return p.errorf("expected a rule name, found %q", p.src[p.pos:p.pos+1])
		}
		if p.defined[name] {
			return p.errorf("rule %q is defined twice", name)
		}
		p.space(false)
		if !strings.HasPrefix(p.src[p.pos:], "::=") {
			return p.errorf("expected ::= after %q", name)
		}
		p.pos += 3
		id := p.id(name)
		alts, err := p.alternatives(false)
		if err != nil {
			return err
		}
		p.define(id, alts)
		p.space(true)
	}
	return nil
}

// alternatives reads sequences separated by |, up to the end of the rule
// (a newline outside parentheses) or, nested, a closing parenthesis.
func (p *parser) alternatives(nested bool) ([][]elem, error) {
	var alts [][]elem
	for {
		seq, err := p.sequence(nested)
		if err != nil {
			return nil, err
		}
		alts = append(alts, seq)
		p.space(nested)
		if p.pos < len(p.src) && p.src[p.pos] == '|' {
			p.pos++
			p.space(true)
			continue
		}
		return alts, nil
	}
}

func (p *parser) sequence(nested bool) ([]elem, error) {
	var seq []elem
	last := -1 // start in seq of the last item, for a repetition
	for {
		p.space(nested)
		if p.pos >= len(p.src) {
			return seq, nil
		}
		c := p.src[p.pos]
		start := len(seq)
		switch {
		case c == '"':
			p.pos++
			for {
				if p.pos >= len(p.src) {
					return nil, p.errorf("unterminated literal")
				}
				if p.src[p.pos] == '"' {
					p.pos++
					break
				}
				r, err := p.char()
				if err != nil {
					return nil, err
				}
				seq = append(seq, elem{kind: elemChar, ranges: []rune{r, r}})
			}
			if len(seq) == start { // "" matches the empty string
				seq = append(seq, p.fresh("empty", [][]elem{{}}))
			}
		case c == '[':
			e, err := p.class()
			if err != nil {
				return nil, err
			}
			seq = append(seq, e)
		case c == '(':
			if p.depth++; p.depth > maxNesting {
				return nil, p.errorf("groups nested deeper than %d", maxNesting)
			}
			p.pos++
			p.space(true)
			alts, err := p.alternatives(true)
			p.depth--
			if err != nil {
				return nil, err
			}
			p.space(true)
			if p.pos >= len(p.src) || p.src[p.pos] != ')' {
				return nil, p.errorf("expected )")
			}
			p.pos++
			seq = append(seq, p.fresh("group", alts))
		case isNameByte(c):
			// A name followed by ::= starts the next rule.
			save := p.pos
			name := p.name()
			p.space(false)
			if strings.HasPrefix(p.src[p.pos:], "::=") {
				p.pos = save
				return seq, nil
			}
			seq = append(seq, elem{kind: elemRef, rule: p.id(name)})
		case c == '*' || c == '+' || c == '?' || c == '{':
			if last < 0 {
				return nil, p.errorf("%q repeats nothing", c)
			}
			item := seq[last:]
			rep, err := p.repetition(item)
			if err != nil {
				return nil, err
			}
			seq = append(seq[:last], rep)
			continue
		default:
			return seq, nil
		}
		last = start
	}
}

// repetition reads *, +, ?, {m}, {m,} or {m,n} after item and returns a
// reference to a generated rule for it.
func (p *parser) repetition(item []elem) (elem, error) {
	item = append([]elem(nil), item...)
	c := p.src[p.pos]
	p.pos++
	lo, hi := 0, -1
	switch c {
	case '+':
		lo = 1
	case '?':
		hi = 1
	case '{':
		var err error
		if lo, hi, err = p.bounds(); err != nil {
			return elem{}, err
		}
	}
	// x{lo,hi}: lo copies, then hi-lo optional ones nested (x (x (x)?)?)?,
	// or x* for an open end: star ::= x star | ε.
	if copies := max(lo, hi, 1); len(p.g.elems)+len(item)*copies > maxElems {
		return elem{}, p.errorf("the grammar grows past %d elements (%d copies of %d)", maxElems, copies, len(item))
	}
	var tail elem
	switch {
	case hi < 0:
		p.gen++
		id := p.id(fmt.Sprintf("star-%d", p.gen))
		p.define(id, [][]elem{append(append([]elem(nil), item...), elem{kind: elemRef, rule: id}), {}})
		tail = elem{kind: elemRef, rule: id}
	case hi > lo:
		tail = p.fresh("opt", [][]elem{item, {}})
		for range hi - lo - 1 {
			tail = p.fresh("opt", [][]elem{append(append([]elem(nil), item...), tail), {}})
		}
	}
	var seq []elem
	for range lo {
		seq = append(seq, item...)
	}
	if hi < 0 || hi > lo {
		seq = append(seq, tail)
	}
	return p.fresh("rep", [][]elem{seq}), nil
}

// maxElems bounds a compiled grammar: repetitions copy their item, so a
// request's grammar could otherwise ask for gigabytes.
const maxElems = 1 << 20

func (p *parser) bounds() (lo, hi int, err error) {
	num := func() (int, bool) {
		start := p.pos
		for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
			p.pos++
		}
		n, err := strconv.Atoi(p.src[start:p.pos])
		return n, err == nil
	}
	p.space(false)
	lo, ok := num()
	if !ok {
		return 0, 0, p.errorf("expected a number after {")
	}
	hi = lo
	p.space(false)
	if p.pos < len(p.src) && p.src[p.pos] == ',' {
		p.pos++
		p.space(false)
		hi = -1
		if p.pos < len(p.src) && p.src[p.pos] != '}' {
			if hi, ok = num(); !ok {
				return 0, 0, p.errorf("expected a number or } after ,")
			}
		}
		p.space(false)
	}
	if p.pos >= len(p.src) || p.src[p.pos] != '}' {
		return 0, 0, p.errorf("expected }")
	}
	p.pos++
	const most = 1000 // each bound is that many copies of the item
	if hi >= 0 && hi < lo || lo > most || hi > most {
		return 0, 0, p.errorf("repetition {%d,%d} is not 0 ≤ m ≤ n ≤ %d", lo, hi, most)
	}
	return lo, hi, nil
}

// class reads a [character class].
func (p *parser) class() (elem, error) {
	p.pos++ // [
	e := elem{kind: elemChar}
	if p.pos < len(p.src) && p.src[p.pos] == '^' {
		e.negate = true
		p.pos++
	}
	for {
		if p.pos >= len(p.src) {
			return elem{}, p.errorf("unterminated character class")
		}
		if p.src[p.pos] == ']' {
			p.pos++
			return e, nil
		}
		lo, err := p.char()
		if err != nil {
			return elem{}, err
		}
		hi := lo
		if p.pos+1 < len(p.src) && p.src[p.pos] == '-' && p.src[p.pos+1] != ']' {
			p.pos++
			if hi, err = p.char(); err != nil {
				return elem{}, err
			}
			if hi < lo {
				return elem{}, p.errorf("range %q-%q runs backwards", lo, hi)
			}
		}
		e.ranges = append(e.ranges, lo, hi)
	}
}

// char reads one character of a literal or class, escapes included.
func (p *parser) char() (rune, error) {
	if p.src[p.pos] != '\\' {
		r, n := utf8.DecodeRuneInString(p.src[p.pos:])
		if r == utf8.RuneError && n <= 1 {
			return 0, p.errorf("invalid UTF-8")
		}
		p.pos += n
		return r, nil
	}
	p.pos++
	if p.pos >= len(p.src) {
		return 0, p.errorf("escape at the end")
	}
	c := p.src[p.pos]
	p.pos++
	hex := 0
	switch c {
	case 'n':
		return '\n', nil
	case 't':
		return '\t', nil
	case 'r':
		return '\r', nil
	case '\\', '"', '[', ']', '-', '^':
		return rune(c), nil
	case 'x':
		hex = 2
	case 'u':
		hex = 4
	case 'U':
		hex = 8
	default:
		return 0, p.errorf("unknown escape \\%c", c)
	}
	if p.pos+hex > len(p.src) {
		return 0, p.errorf("\\%c needs %d hex digits", c, hex)
	}
	v, err := strconv.ParseUint(p.src[p.pos:p.pos+hex], 16, 32)
	if err != nil || v > utf8.MaxRune {
		return 0, p.errorf("bad escape \\%c%s", c, p.src[p.pos:p.pos+hex])
	}
	p.pos += hex
	return rune(v), nil
}

// checkLeftRecursion refuses a rule that can reach itself before taking a
// character: the recognizer would expand it forever.
func (g *Grammar) checkLeftRecursion() error {
	nullable := g.rulesWhere(g.nullableFrom)
	// first[r]: the rules r can expand to without taking a character.
	state := make([]uint8, len(g.alts)) // 0 unseen, 1 on the path, 2 done
	var visit func(r int32) error
	visit = func(r int32) error {
		switch state[r] {
		case 1:
			return fmt.Errorf("grammar: rule %q is left-recursive (it can expand to itself before any character)", g.names[r])
		case 2:
			return nil
		}
		state[r] = 1
		for _, a := range g.alts[r] {
			for i := a; g.elems[i].kind == elemRef; i++ {
				if err := visit(g.elems[i].rule); err != nil {
					return err
				}
				if !nullable[g.elems[i].rule] {
					break
				}
			}
		}
		state[r] = 2
		return nil
	}
	for r := range g.alts {
		if err := visit(int32(r)); err != nil {
			return err
		}
	}
	return nil
}

// rulesWhere is, for each rule, whether some alternative of it holds by
// alt, given what is known of the rules so far: the least fixed point.
func (g *Grammar) rulesWhere(alt func(i int32, known []bool) bool) []bool {
	known := make([]bool, len(g.alts))
	for changed := true; changed; {
		changed = false
		for r, alts := range g.alts {
			if known[r] {
				continue
			}
			for _, a := range alts {
				if alt(a, known) {
					known[r], changed = true, true
					break
				}
			}
		}
	}
	return known
}

// nullableFrom reports whether the alternative from elems[i] can match
// the empty string, given the rules known nullable.
func (g *Grammar) nullableFrom(i int32, nullable []bool) bool {
	for ; g.elems[i].kind != elemEnd; i++ {
		if g.elems[i].kind == elemChar || !nullable[g.elems[i].rule] {
			return false
		}
	}
	return true
}
