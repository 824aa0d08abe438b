package tokenizer

import "unicode/utf8"

// Llama 3 splits text into pieces with the regex (tokenizer.json's
// pre_tokenizer Split pattern, llama.cpp's LLAMA3 pre-type)
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// and Qwen2 with the same pattern but \p{N} (one digit a piece). Go's
// regexp has no lookahead (and backtracks nowhere), so llama3Piece is the
// pattern written out by hand, as nextPiece is for GPT-2: alternatives are
// tried in order at each position, and each one's backtracking is worked
// out below. Character classes are those of pretokenize.go (unicode
// IsLetter, IsNumber, IsSpace = White_Space); bytes that are not UTF-8 are
// "other", one at a time, so any input splits into pieces that concatenate
// back to it.
//
// The contractions are case-insensitive in ASCII only, as in llama.cpp's
// hand-written matcher; Hugging Face's Oniguruma would also fold U+017F
// (ſ) to s, so "'ſ" differs between the two peers, and here follows
// llama.cpp.

// llama3Splitter returns the pre-tokenizer that groups at most maxDigits
// numbers a piece: 3 for Llama 3, 1 for Qwen2.
func llama3Splitter(maxDigits int) func(string, func(string)) {
	return func(s string, yield func(string)) {
		for i := 0; i < len(s); {
			j := llama3Piece(s, i, maxDigits)
			yield(s[i:j])
			i = j
		}
	}
}

// contractionFold is contraction (pretokenize.go) ignoring ASCII case.
func contractionFold(s string, i int) int {
	if s[i] != '\'' || i+1 >= len(s) {
		return 0
	}
	lower := func(c byte) byte { return c | 0x20 } // only compared with letters
	switch lower(s[i+1]) {
	case 's', 't', 'm', 'd':
		return 2
	case 'r', 'v':
		if i+2 < len(s) && lower(s[i+2]) == 'e' {
			return 3
		}
	case 'l':
		if i+2 < len(s) && lower(s[i+2]) == 'l' {
			return 3
		}
	}
	return 0
}

// isCRLF reports whether s[i] is \r or \n.
func isCRLF(s string, i int) bool { return s[i] == '\r' || s[i] == '\n' }

// runEndNumbers is runEnd for numbers, stopping after max of them.
func runEndNumbers(s string, i, max int) int {
	for k := 0; k < max && i < len(s); k++ {
		c, n := classAt(s, i)
		if c != classNumber {
			break
		}
		i += n
	}
	return i
}

// llama3Piece returns the end of the piece starting at s[i]; i < len(s).
func llama3Piece(s string, i, maxDigits int) int {
	// (?i:'s|'t|'re|'ve|'m|'ll|'d)
	if n := contractionFold(s, i); n > 0 {
		return i + n
	}
	c, n := classAt(s, i)
	// [^\r\n\p{L}\p{N}]?\p{L}+: one character that is not a newline, letter
	// or number (a space, punctuation, a tab...) joins the letters after
	// it; failing that, a run of letters.
	if c != classLetter && c != classNumber && !isCRLF(s, i) && i+n < len(s) {
		if next, m := classAt(s, i+n); next == classLetter {
			return runEnd(s, i+n+m, classLetter)
		}
	}
	if c == classLetter {
		return runEnd(s, i+n, classLetter)
	}
	// \p{N}{1,3} (Llama 3) or \p{N} (Qwen2).
	if c == classNumber {
		return runEndNumbers(s, i, maxDigits)
	}
	//  ?[^\s\p{L}\p{N}]+[\r\n]*: punctuation and the like, with one ASCII
	// space before it and any newlines after it.
	start := i
	if s[i] == ' ' && i+1 < len(s) {
		if next, _ := classAt(s, i+1); next == classOther {
			start = i + 1
		}
	}
	if oc, _ := classAt(s, start); oc == classOther {
		j := runEnd(s, start, classOther)
		for j < len(s) && isCRLF(s, j) {
			j++
		}
		return j
	}
	// Only whitespace is left: c == classSpace.
	end := runEnd(s, i+n, classSpace)
	// \s*[\r\n]+: \s* takes the whole run, then gives characters back until
	// [\r\n]+ can start; that is at the run's last \r or \n, and [\r\n]+
	// then ends right after it (the next character of the run, if any, is
	// not a newline, or it would have been the last). So: up to and
	// including the run's last newline, if it has one.
	for j := end - 1; j >= i; j-- {
		if isCRLF(s, j) {
			return j + 1
		}
	}
	// \s+(?!\S) then \s+, as in GPT-2's pattern: at the end of the text the
	// whole run; before anything else the run less its last character,
	// unless that leaves nothing.
	if end == len(s) || end == i+n {
		return end
	}
	_, last := utf8.DecodeLastRuneInString(s[i:end])
	return end - last
}
