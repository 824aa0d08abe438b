package server

import (
	"strings"
	"unicode/utf8"
)

// coverage holds a choice's scored tokens back until the text they add
// has been released, so that log-probabilities cover exactly the text a
// client gets: generation holds text back while it could still begin a
// stop string, and the tokens of a stop string (or past it) are never
// text. Offsets and ends count characters of the choice's text, as
// tokenText renders them.
type coverage struct {
	pending  []scoredToken
	released int // characters of the choice's text released so far
}

// newCoverage starts after the characters already released (an echoed
// prompt).
func newCoverage(before int) *coverage { return &coverage{released: before} }

// add queues t and releases text, returning the tokens whose text is now
// all released, in order. A token that adds no character yet (the first
// bytes of a split character, shown as U+FFFD) waits for the character's
// release; one that adds no text at all (EOS, a special token) does not.
func (c *coverage) add(t scoredToken, text string) []scoredToken {
	c.pending = append(c.pending, t)
	c.released += utf8.RuneCountInString(text)
	n := 0
	for n < len(c.pending) {
		p := c.pending[n]
		split := p.end == p.offset && strings.ContainsRune(p.piece.text, utf8.RuneError)
		if p.end > c.released || (split && p.offset >= c.released) {
			break
		}
		n++
	}
	out := c.pending[:n:n]
	c.pending = c.pending[n:]
	return out
}

// finish releases what is still held once the generation has ended with
// the text it released last (already passed to add). Unless a stop string
// cut the text, that is every token; after a cut, the tokens that begin
// before it, the one the cut splits reduced to its part of the text, and
// none of the stop string's or past it.
func (c *coverage) finish(cut bool) []scoredToken {
	out := c.pending
	c.pending = nil
	if !cut {
		return out
	}
	n := 0
	for n < len(out) && out[n].offset < c.released {
		n++
	}
	out = out[:n]
	if n > 0 && out[n-1].end > c.released {
		out[n-1].piece = clip(out[n-1].piece, c.released-out[n-1].offset)
		out[n-1].end = c.released
	}
	return out
}

// clip is p's first n characters. A piece whose text is not its bytes (a
// character split between tokens) keeps its bytes, which no character
// count can cut.
func clip(p piece, n int) piece {
	if string(p.bytes) != p.text {
		return p
	}
	r := []rune(p.text)
	if n >= len(r) {
		return p
	}
	s := string(r[:n])
	return piece{bytes: []byte(s), text: s}
}
