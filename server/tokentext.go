package server

import (
	"slices"
	"unicode/utf8"

	"github.com/llorch/llorch-check/generation"
	"github.com/llorch/llorch-check/tokenizer"
)

// tokenText renders a choice's tokens for log-probabilities as the text
// each adds to the choice's text, as OpenAI and llama.cpp list them: the
// tokens' bytes joined are the text, and a token's offset indexes it. A
// token rendered alone would lose a SentencePiece piece's leading space,
// which decoding drops only at the start of a whole text.
type tokenText struct {
	tok   *tokenizer.Tokenizer
	dec   *tokenizer.StreamDecoder
	lead  bool  // the next token with bytes starts a whole text (an echoed prompt)
	runes int   // characters of the text released so far
	eos   []int // end-of-generation ids: they add no text
}

// newGeneratedText renders generated tokens: a continuation of the prompt,
// whose leading spaces are text.
func newGeneratedText(e *engine) *tokenText {
	return &tokenText{tok: e.tok, dec: e.tok.NewContinuationDecoder(), eos: e.m.Config.EOSTokens()}
}

// renderPrompt renders an echoed prompt as its text reads: from the start
// of a whole text, where SentencePiece drops its dummy prefix, and without
// the BOS the server put before a prompt given as text (it is not in the
// text). It returns the renderer of the generation that follows, whose
// offsets start after text.
func renderPrompt(e *engine, tokens []scoredToken, text string, fromText bool) *tokenText {
	r := &tokenText{tok: e.tok, dec: e.tok.NewStreamDecoder(), lead: true}
	for i := range tokens {
		if i == 0 && fromText {
			if bos, add := e.tok.BOS(); add && tokens[0].id == bos {
				tokens[0].piece = piece{bytes: []byte{}}
				tokens[0].topPieces = make([]piece, len(tokens[0].top))
				continue
			}
		}
		r.render(&tokens[i])
	}
	g := newGeneratedText(e)
	g.runes = utf8.RuneCountInString(text)
	return g
}

// render sets t's rendering, offset and its alternatives' renderings.
func (r *tokenText) render(t *scoredToken) {
	t.piece, t.offset, t.end = r.piece(t.id), r.runes, r.runes
	t.topPieces = make([]piece, len(t.top))
	for k, a := range t.top {
		t.topPieces[k] = r.piece(a.ID)
	}
	if slices.Contains(r.eos, t.id) {
		return
	}
	raw, _ := r.tok.TokenBytes(t.id)
	if len(raw) > 0 {
		r.lead = false // as the StreamDecoder, which drops the prefix of the first token with bytes only
	}
	if breaks(r.dec.Held(), raw) {
		// The earlier tokens' unfinished character ends here as one U+FFFD
		// of theirs: this token's text begins after it.
		t.offset++
	}
	s, _ := r.dec.Add(t.id)
	r.runes += utf8.RuneCountInString(s)
	t.end = r.runes
}

// piece is what token id adds to the text at this point: its exact bytes
// and, as OpenAI shows a token, those bytes as text, each piece of a
// character split between tokens a U+FFFD.
func (r *tokenText) piece(id int) piece {
	if slices.Contains(r.eos, id) {
		return piece{bytes: []byte{}}
	}
	if r.lead {
		b, _ := r.tok.DecodeBytes([]int{id}) // drops SentencePiece's dummy prefix
		s, _ := r.tok.Decode([]int{id})
		return piece{bytes: b, text: s}
	}
	b, _ := r.tok.TokenBytes(id)
	s, _ := r.tok.DecodeContinuation([]int{id})
	return piece{bytes: b, text: s}
}

// add renders a generated token and returns it.
func (r *tokenText) add(t generation.Token) scoredToken {
	st := scoredToken{id: t.ID, logprob: &t.LogProb, top: t.TopLogProbs}
	r.render(&st)
	return st
}

// piece is a token as the text it adds.
type piece struct {
	bytes []byte
	text  string
}

// breaks reports whether next, a token's bytes, cannot go on with held,
// the valid start of a character that earlier tokens left unfinished: a
// lone byte-fallback token followed by text. Held is then a maximal
// subpart of an ill-formed sequence, decoded as one U+FFFD before next's
// text; otherwise next's first byte is part of the character.
func breaks(held, next []byte) bool {
	if len(held) == 0 || len(next) == 0 {
		return false
	}
	b := append(held[:len(held):len(held)], next[0])
	_, size := utf8.DecodeRune(b)
	return utf8.FullRune(b) && size < len(b)
}
