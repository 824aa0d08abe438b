// Package utf8seq is the shape of well-formed UTF-8 sequences, which the
// tokenizer's lossy decoding and the grammar's byte-by-byte matching both
// need and package unicode/utf8 does not export.
package utf8seq

// Shape gives, for a lead byte, the length of its sequence and the range
// allowed for the second byte (Unicode's Table 3-7, "Well-Formed UTF-8
// Byte Sequences": no overlong forms, surrogates or code points above
// U+10FFFF); n is 0 if c cannot start a sequence, 1 for ASCII.
func Shape(c byte) (n int, lo, hi byte) {
	switch {
	case c < 0x80:
		return 1, 0, 0
	case c >= 0xC2 && c <= 0xDF:
		return 2, 0x80, 0xBF
	case c == 0xE0:
		return 3, 0xA0, 0xBF
	case c >= 0xE1 && c <= 0xEC, c == 0xEE, c == 0xEF:
		return 3, 0x80, 0xBF
	case c == 0xED:
		return 3, 0x80, 0x9F
	case c == 0xF0:
		return 4, 0x90, 0xBF
	case c >= 0xF1 && c <= 0xF3:
		return 4, 0x80, 0xBF
	case c == 0xF4:
		return 4, 0x80, 0x8F
	}
	return 0, 0, 0
}
