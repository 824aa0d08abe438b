package grammar

import "fmt"

// pruneUnproductive drops every alternative that can match no text: one
// holding a character class with no character a UTF-8 text can have
// ([^\x00-\U0010FFFF], a lone surrogate \uD800), or a rule that itself
// matches nothing. The matcher then never enters a position it cannot
// finish, so a mask is never empty before the text is whole; a grammar
// whose root is left with nothing is an error naming the class at fault.
func (g *Grammar) pruneUnproductive() error {
	productive := g.rulesWhere(g.productiveFrom)
	if !productive[g.root] {
		for i := range g.elems {
			if e := &g.elems[i]; e.kind == elemChar && !e.holdsScalar() {
				return fmt.Errorf("grammar: the language is empty: rule %q matches no text (rule %q has a character class that holds no character of a UTF-8 text)", "root", g.names[g.ruleOf(int32(i))])
			}
		}
		return fmt.Errorf("grammar: the language is empty: rule %q matches no text (every alternative recurses without end)", "root")
	}
	for r, alts := range g.alts {
		kept := alts[:0]
		for _, a := range alts {
			if g.productiveFrom(a, productive) {
				kept = append(kept, a)
			}
		}
		g.alts[r] = kept
	}
	return nil
}

// productiveFrom reports whether the alternative from elems[i] can match
// some text, given the rules known to.
func (g *Grammar) productiveFrom(i int32, productive []bool) bool {
	for ; g.elems[i].kind != elemEnd; i++ {
		e := &g.elems[i]
		if e.kind == elemChar && !e.holdsScalar() || e.kind == elemRef && !productive[e.rule] {
			return false
		}
	}
	return true
}

// holdsScalar reports whether a char element's set holds a Unicode scalar
// value (a code point UTF-8 encodes: not a surrogate).
func (e *elem) holdsScalar() bool {
	return e.overlaps(0, 0xD7FF) || e.overlaps(0xE000, 0x10FFFF)
}

// ruleOf is the rule whose alternatives hold elems[i].
func (g *Grammar) ruleOf(i int32) int32 {
	best, at := int32(0), int32(-1)
	for r, alts := range g.alts {
		for _, a := range alts {
			if a <= i && a > at {
				best, at = int32(r), a
			}
		}
	}
	return best
}
