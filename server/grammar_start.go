package server

import (
	"sync"

	"github.com/llorch/llorch-check/grammar"
	"github.com/llorch/llorch-check/tokenizer"
)

// startIndex is what checking a grammar's first step against a model's
// vocabulary needs, built once per engine on its first constrained
// request: which bytes a token of one byte spells (every byte, in the
// byte-level and byte-fallback vocabularies of most models), and for the
// bytes none does, the tokens that begin with them. Tokens a constrained
// text never takes (no bytes; special tokens, end of text included, which
// ends a text rather than spells it) are left out, as generation leaves
// them out of its masks.
type startIndex struct {
	once    sync.Once
	single  [256]bool
	byFirst [256][]int32
}

func (x *startIndex) build(tok *tokenizer.Tokenizer, eos []int) {
	x.once.Do(func() {
		special := map[int]bool{}
		for _, id := range append(tok.SpecialIDs(), eos...) {
			special[id] = true
		}
		var rest [256][]int32
		for id := range tok.VocabSize() {
			b, err := tok.TokenBytes(id)
			if err != nil || len(b) == 0 || special[id] {
				continue
			}
			if len(b) == 1 {
				x.single[b[0]] = true
			} else {
				rest[b[0]] = append(rest[b[0]], int32(id))
			}
		}
		for c := range rest {
			if !x.single[c] {
				x.byFirst[c] = rest[c]
			}
		}
	})
}

// startsIn reports whether some token of the vocabulary (or end of text,
// where the empty text is whole) can begin a text of g: the first step's
// mask is not empty. A grammar failing it would fail its request's first
// step, a dead end (generation.ErrGrammarDeadEnd) found before a slot is
// taken.
func (e *engine) startsIn(g *grammar.Grammar) bool {
	m := g.NewMatcher()
	if m.Complete() && len(e.m.Config.EOSTokens()) > 0 {
		return true
	}
	e.start.build(e.tok, e.m.Config.EOSTokens())
	for c := range 256 {
		if !m.Viable([]byte{byte(c)}) {
			continue
		}
		if e.start.single[c] {
			return true
		}
		for _, id := range e.start.byFirst[c] {
			if b, _ := e.tok.TokenBytes(int(id)); m.Viable(b) {
				return true
			}
		}
	}
	return false
}

// deadStart is the message for a grammar no token of the vocabulary can
// begin.
const deadStart = "no token of this model's vocabulary can begin a text the grammar allows (it needs a character the vocabulary cannot spell)"

// startable is g, or nil with an error under name when the vocabulary
// cannot begin it.
func (f *fields) startable(e *engine, name string, g *grammar.Grammar) *grammar.Grammar {
	if g != nil && !e.startsIn(g) {
		f.bad(name, "grammar", deadStart, nil)
		return nil
	}
	return g
}
