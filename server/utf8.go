package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/llorch/llorch-check/generation"
)

// invalidText names every string of a request body that is not valid
// Unicode text: bytes that are not UTF-8, or a \u escape of a lone UTF-16
// surrogate. encoding/json would make either U+FFFD, and the server would
// continue or score text the client never sent. Each string is named by
// its path (prompt, messages[0].content, input[2]); an invalid object key
// makes the field "body".
func invalidText(body []byte, raw map[string]json.RawMessage) []FieldError {
	if utf8.Valid(body) && !bytes.Contains(body, []byte(`\ud`)) && !bytes.Contains(body, []byte(`\uD`)) {
		return nil
	}
	var errs []FieldError
	for _, name := range slices.Sorted(maps.Keys(raw)) {
		walkText(name, raw[name], &errs)
	}
	if len(errs) == 0 && !utf8.Valid(body) {
		errs = append(errs, FieldError{Field: "body", Constraint: generation.CodeUTF8, Message: "must be valid UTF-8 (a field name is not)"})
	}
	return errs
}

// walkText adds an error for each string inside v that is not valid text.
func walkText(path string, v json.RawMessage, errs *[]FieldError) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return
	}
	switch v[0] {
	case '"':
		if msg := badString(v); msg != "" {
			*errs = append(*errs, FieldError{Field: path, Constraint: generation.CodeUTF8, Message: msg})
		}
	case '{':
		var m map[string]json.RawMessage
		if json.Unmarshal(v, &m) == nil {
			for _, k := range slices.Sorted(maps.Keys(m)) {
				walkText(path+"."+k, m[k], errs)
			}
		}
	case '[':
		var a []json.RawMessage
		if json.Unmarshal(v, &a) == nil {
			for i, e := range a {
				walkText(fmt.Sprintf("%s[%d]", path, i), e, errs)
			}
		}
	}
}

// badString says what is wrong with a JSON string literal (quotes
// included) as text, or "" if nothing is: offsets count the bytes between
// the quotes.
func badString(lit []byte) string {
	s := lit[1 : len(lit)-1]
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRune(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			return fmt.Sprintf("must be valid UTF-8: byte 0x%02x at byte %d is not", s[i], i)
		case r == '\\' && i+1 < len(s) && s[i+1] == 'u':
			u, ok := hex4(s, i+2)
			if !ok || !utf16.IsSurrogate(rune(u)) {
				break
			}
			if lo, ok := hex4(s, i+8); ok && u < 0xdc00 && i+7 < len(s) && s[i+6] == '\\' && s[i+7] == 'u' &&
				utf16.DecodeRune(rune(u), rune(lo)) != utf8.RuneError {
				i += 12
				continue
			}
			return fmt.Sprintf(`must be valid UTF-8: \u%04x at byte %d is a lone UTF-16 surrogate, not a character`, u, i)
		case r == '\\':
			n = 2 // an escaped character, such as \" or \\
		}
		i += n
	}
	return ""
}

// hex4 reads the four hex digits at s[i:], if they are there.
func hex4(s []byte, i int) (uint64, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	u, err := strconv.ParseUint(string(s[i:i+4]), 16, 16)
	return u, err == nil
}
