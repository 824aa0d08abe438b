package tokenizer

// GPT-2's vocabulary is over bytes, but stored as text: each byte is
// represented by one printable character (bytes_to_unicode in OpenAI's
// encoder.py). Printable Latin-1 bytes stand for themselves; the others map,
// in byte order, to U+0100 onwards. So a space is "Ġ" (U+0120).
var byteToRune, runeToByte = func() (fwd [256]rune, rev map[rune]byte) {
	rev = make(map[rune]byte, 256)
	next := rune(256)
	for b := range 256 {
		printable := b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE && b <= 0xFF
		if printable {
			fwd[b] = rune(b)
		} else {
			fwd[b] = next
			next++
		}
		rev[fwd[b]] = byte(b)
	}
	return fwd, rev
}()

// tokenBytes turns a vocabulary entry back into the bytes it stands for.
// A character outside the mapping (only in hand-made vocabularies) stands
// for its own UTF-8 encoding rather than being an error, as in Hugging
// Face's ByteLevel decoder.
func tokenBytes(tok string) []byte {
	out := make([]byte, 0, len(tok))
	for _, r := range tok {
		if b, ok := runeToByte[r]; ok {
			out = append(out, b)
		} else {
			out = append(out, string(r)...)
		}
	}
	return out
}

// byteLevel is the inverse of tokenBytes, used to build vocabulary keys.
func byteLevel(b []byte) string {
	out := make([]rune, len(b))
	for i, c := range b {
		out[i] = byteToRune[c]
	}
	return string(out)
}
