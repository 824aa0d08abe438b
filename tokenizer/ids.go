package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/llorch/llorch-check/gguf"
)

// ParseIDs reads token ids written as a JSON array ("[15496, 995]") or
// separated by spaces, commas or newlines ("15496 995"). Anything that is
// not an integer is an error wrapping ErrInvalidID. Range is not checked
// here; Decode does that against the vocabulary.
func ParseIDs(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "[") {
		var ids []int
		if err := json.Unmarshal([]byte(s), &ids); err != nil {
			return nil, fmt.Errorf("%w: not a JSON array of integers: %v", ErrInvalidID, err)
		}
		return ids, nil
	}
	fields := strings.FieldsFunc(s, func(r rune) bool {
		return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r'
	})
	ids := make([]int, 0, len(fields))
	for _, f := range fields {
		id, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%w: %q is not an integer", ErrInvalidID, f)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// FormatIDs writes ids space-separated, or as a JSON array.
func FormatIDs(ids []int, asJSON bool) string {
	var sb strings.Builder
	if asJSON {
		sb.WriteByte('[')
	}
	for i, id := range ids {
		if i > 0 {
			if asJSON {
				sb.WriteByte(',')
			}
			sb.WriteByte(' ')
		}
		sb.WriteString(strconv.Itoa(id))
	}
	if asJSON {
		sb.WriteByte(']')
	}
	return sb.String()
}

// IsInputError reports whether err is the user's input's fault (a missing
// or malformed tokenizer file, a directory with none, an invalid id) as
// opposed to an internal failure: the CLI's exit code 2.
func IsInputError(err error) bool {
	for _, target := range []error{ErrNoTokenizer, ErrInvalidID, ErrFormat, gguf.ErrInvalid, fs.ErrNotExist, fs.ErrPermission} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}
