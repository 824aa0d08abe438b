package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// GPT-2 splits text into pieces with the Python regex
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// Go's regexp has no lookahead and is slow, so nextPiece is that pattern
// written out by hand. Alternatives are tried in order at each position,
// like the regex engine does. Bytes that are not valid UTF-8 are classed as
// "other" (neither space, letter nor number) one byte at a time, so any
// input splits into pieces that concatenate back to it.

type class uint8

const (
	classOther class = iota
	classLetter
	classNumber
	classSpace
)

// asciiClass avoids the unicode tables for the common case.
var asciiClass = func() (t [utf8.RuneSelf]class) {
	for c := range t {
		switch r := rune(c); {
		case unicode.IsLetter(r):
			t[c] = classLetter
		case unicode.IsNumber(r):
			t[c] = classNumber
		case unicode.IsSpace(r):
			t[c] = classSpace
		}
	}
	return t
}()

// classAt returns the class and byte width of the character at s[i].
// unicode.IsSpace is exactly Unicode White_Space, which is what \s means in
// the regex engines GPT-2 implementations use.
func classAt(s string, i int) (class, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return asciiClass[c], 1
	}
	r, n := utf8.DecodeRuneInString(s[i:])
	switch {
	case r == utf8.RuneError && n == 1:
		return classOther, 1
	case unicode.IsLetter(r):
		return classLetter, n
	case unicode.IsNumber(r):
		return classNumber, n
	case unicode.IsSpace(r):
		return classSpace, n
	}
	return classOther, n
}

// runEnd returns the end of the run of characters of class c starting at i.
func runEnd(s string, i int, c class) int {
	for i < len(s) {
		ci, n := classAt(s, i)
		if ci != c {
			break
		}
		i += n
	}
	return i
}

// contraction returns the length of 's 't 're 've 'm 'll 'd at s[i], or 0.
// Case-sensitive, as in GPT-2's pattern.
func contraction(s string, i int) int {
	if s[i] != '\'' || i+1 >= len(s) {
		return 0
	}
	switch s[i+1] {
	case 's', 't', 'm', 'd':
		return 2
	case 'r', 'v':
		if i+2 < len(s) && s[i+2] == 'e' {
			return 3
		}
	case 'l':
		if i+2 < len(s) && s[i+2] == 'l' {
			return 3
		}
	}
	return 0
}

// nextPiece returns the end of the piece starting at s[i]; i < len(s).
func nextPiece(s string, i int) int {
	if n := contraction(s, i); n > 0 {
		return i + n
	}
	c, n := classAt(s, i)
	// " ?X+" for letters, numbers and others: a single ASCII space joins the
	// run that follows it.
	if s[i] == ' ' && i+1 < len(s) {
		if next, m := classAt(s, i+1); next != classSpace {
			return runEnd(s, i+1+m, next)
		}
	}
	if c != classSpace {
		return runEnd(s, i+n, c)
	}
	// \s+(?!\S) then \s+: a whitespace run at the end of the text is one
	// piece; before anything else it gives up its last character, which then
	// starts the next piece (so " word" keeps its space), unless the run is
	// a single character.
	end := runEnd(s, i+n, classSpace)
	if end == len(s) || end == i+n {
		return end
	}
	// The run is whitespace, hence valid UTF-8.
	_, last := utf8.DecodeLastRuneInString(s[i:end])
	return end - last
}

// pieces calls yield with each piece of s in order.
func pieces(s string, yield func(string)) {
	for i := 0; i < len(s); {
		j := nextPiece(s, i)
		yield(s[i:j])
		i = j
	}
}
