package grammar

import (
	"fmt"
	"slices"
	"strings"
)

// stringFormats are GBNF for the inside of a string of each format
// supported, after llama.cpp's: RFC 3339's full-date, full-time and
// date-time (days as each month has them, February to the 28th: a 29th
// would need the year's leap), RFC 4122's uuid in hex either case, and an
// email address of one to three dot-separated atoms at a domain of one to
// three labels and a top-level name, each part at most 20 characters
// (10 the top-level name), so that a model that never stops writing a
// part still ends within a small context: what zod's .email() takes,
// without quoted or bracketed forms.
var stringFormats = map[string]string{
	"date":  `[0-9]{4} "-" (("0" [13578] | "1" [02]) "-" ("0" [1-9] | [12] [0-9] | "3" [01]) | ("0" [469] | "11") "-" ("0" [1-9] | [12] [0-9] | "30") | "02" "-" ("0" [1-9] | "1" [0-9] | "2" [0-8]))`,
	"time":  `([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ("." [0-9]{1,9})? ("Z" | [+-] ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9])`,
	"uuid":  `[0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12}`,
	"email": `[A-Za-z0-9_+-]{1,20} ("." [A-Za-z0-9_+-]{1,20}){0,2} "@" ([A-Za-z0-9] ([A-Za-z0-9-]{0,18} [A-Za-z0-9])? "."){1,3} [A-Za-z]{2,10}`,
}

func init() {
	stringFormats["date-time"] = "(" + stringFormats["date"] + `) "T" (` + stringFormats["time"] + ")"
}

// stringKeywords constrain a string's characters; format and pattern
// each fix them whole, so each is refused beside another.
var stringKeywords = []string{"format", "pattern", "minLength", "maxLength"}

// str is the rule of a string: its lengths, its format or its pattern.
func (c *converter) str(s *object, path string) (string, error) {
	var given []string
	for _, k := range stringKeywords {
		if _, ok := s.get(k); ok {
			given = append(given, k)
		}
	}
	if len(given) > 1 && (slices.Contains(given, "format") || slices.Contains(given, "pattern")) {
		return "", &SchemaError{Path: path, Message: fmt.Sprintf("%s together are not supported (each of format and pattern only alone)", strings.Join(given, " and "))}
	}
	quoted := func(inside string) string { return `"\"" ` + inside + ` "\"" ` + c.use("space") }
	if v, ok := s.get("format"); ok {
		f, _ := v.(string)
		body, ok := stringFormats[f]
		if !ok {
			return "", &SchemaError{Path: path + "/format", Message: fmt.Sprintf("the format %q is not supported (date, time, date-time, uuid, email)", f)}
		}
		return quoted("(" + body + ")"), nil
	}
	if v, ok := s.get("pattern"); ok {
		src, ok := v.(string)
		if !ok {
			return "", &SchemaError{Path: path + "/pattern", Message: "must be a string"}
		}
		body, err := patternRule(src)
		if err != nil {
			return "", &SchemaError{Path: path + "/pattern", Message: err.Error()}
		}
		if strings.Contains(body, "char") {
			c.use("char")
		}
		return quoted(body), nil
	}
	lo, hi, err := bounds(s, path, "minLength", "maxLength")
	if err != nil {
		return "", err
	}
	if lo == 0 && hi < 0 {
		return c.use("string"), nil
	}
	if hi >= 0 {
		return quoted(repeat(c.use("bmpchar"), lo, hi)), nil
	}
	return quoted(repeat(c.use("char"), lo, hi)), nil
}
