package chat

import (
	"fmt"
	"strings"
	"unicode"
)

// Names of the guard functions instrument calls; Render defines them per
// render (sandbox.go). The engine has no hooks of its own, so the guards are
// written into the template's source.
const (
	guardStep  = "__llorch_sandbox_step"
	guardMacro = "__llorch_sandbox_macro"
	guardPrint = "__llorch_sandbox_print"
)

// tag is one {{ }}, {% %} or {# #} of a template, or the text between them,
// split by the same rules as the engine's scanner: a closer inside a quoted
// string of an expression or statement does not close it.
type tag struct {
	kind      byte // 0 text, '{' expression, '%' statement, '#' comment
	text      string
	trimLeft  bool
	trimRight bool
}

// split cuts src into tags. An unclosed tag is left to the engine to report.
func split(src string) ([]tag, bool) {
	var out []tag
	i, textStart := 0, 0
	for i < len(src) {
		if src[i] != '{' || i+1 >= len(src) || (src[i+1] != '{' && src[i+1] != '%' && src[i+1] != '#') {
			i++
			continue
		}
		kind := src[i+1]
		closer := "}}"
		switch kind {
		case '%':
			closer = "%}"
		case '#':
			closer = "#}"
		}
		if i > textStart {
			out = append(out, tag{text: src[textStart:i]})
		}
		i += 2
		t := tag{kind: kind}
		if i < len(src) && src[i] == '-' {
			t.trimLeft = true
			i++
		}
		start, found := i, false
		for i < len(src) {
			c := src[i]
			if kind != '#' && (c == '\'' || c == '"') {
				i++
				for i < len(src) && src[i] != c {
					if src[i] == '\\' && i+1 < len(src) {
						i++
					}
					i++
				}
				if i < len(src) {
					i++
				}
				continue
			}
			if c == '-' && i+2 < len(src) && src[i+1] == closer[0] && src[i+2] == closer[1] {
				t.text, t.trimRight, found = src[start:i], true, true
				i += 3
				break
			}
			if i+1 < len(src) && c == closer[0] && src[i+1] == closer[1] {
				t.text, found = src[start:i], true
				i += 2
				break
			}
			i++
		}
		if !found {
			return nil, false
		}
		out = append(out, t)
		textStart = i
	}
	if textStart < len(src) {
		out = append(out, tag{text: src[textStart:]})
	}
	return out, true
}

// keyword is a statement's first word, as the engine reads it.
func keyword(text string) string {
	text = strings.TrimSpace(text)
	for i, r := range text {
		if !unicode.IsLetter(r) && r != '_' {
			return text[:i]
		}
	}
	return text
}

// instrument rewrites src so that rendering it calls the guards: every
// {{ expr }} prints guardPrint(expr), which counts the bytes it prints, and
// the body of every for loop starts with a statement calling guardStep(n)
// and of every macro guardMacro(n), n the bytes of literal text in the
// body, which counts a step, charges that text to the output and checks
// the deadline, and for a macro the stack's depth. Loops and macros are the only ways a template repeats work, so
// every unbounded render passes a guard. The inserted statements are
// {% if ... %}{% endif %} pairs that take over the trim flag of the tag
// they follow: trim_blocks and lstrip_blocks see the same neighbours, and
// the output is unchanged. ok is false when src does not scan; the engine
// then reports why.
func instrument(src string) (string, bool) {
	tags, ok := split(src)
	if !ok {
		return src, false
	}
	var b strings.Builder
	b.Grow(len(src) + len(src)/4)
	// Each open for or macro holds where its guard's byte count goes and
	// the text bytes of its body so far.
	type open struct {
		piece int // index in pieces of the placeholder
		text  int
	}
	var pieces []string
	var stack []open
	inRaw := false
	flush := func() {
		pieces = append(pieces, b.String())
		b.Reset()
	}
	writeTag := func(t tag, body string, trimRight bool) {
		b.WriteByte('{')
		b.WriteByte(t.kind)
		if t.trimLeft {
			b.WriteByte('-')
		}
		b.WriteString(body)
		if trimRight {
			b.WriteByte('-')
		}
		switch t.kind {
		case '{':
			b.WriteString("}}")
		case '%':
			b.WriteString("%}")
		default:
			b.WriteString("#}")
		}
	}
	for _, t := range tags {
		switch {
		case t.kind == 0:
			b.WriteString(t.text)
			for i := range stack {
				stack[i].text += len(t.text)
			}
		case inRaw || t.kind == '#':
			writeTag(t, t.text, t.trimRight)
			if t.kind == '%' && keyword(t.text) == "endraw" {
				inRaw = false
			}
		case t.kind == '{':
			if strings.TrimSpace(t.text) == "" {
				writeTag(t, t.text, t.trimRight)
				break
			}
			writeTag(t, " "+guardPrint+"("+t.text+") ", t.trimRight)
		default:
			switch kw := keyword(t.text); kw {
			case "raw":
				inRaw = true
				writeTag(t, t.text, t.trimRight)
			case "for", "macro":
				writeTag(t, t.text, false)
				guard := guardStep
				if kw == "macro" {
					guard = guardMacro
				}
				b.WriteString("{% if " + guard + "(")
				flush()
				stack = append(stack, open{piece: len(pieces)})
				pieces = append(pieces, "0") // the body's text bytes, set at its end
				b.WriteString(") %}{% endif ")
				if t.trimRight {
					b.WriteByte('-')
				}
				b.WriteString("%}")
			case "endfor", "endmacro":
				writeTag(t, t.text, t.trimRight)
				if len(stack) > 0 {
					top := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					pieces[top.piece] = fmt.Sprint(top.text)
				}
			default:
				writeTag(t, t.text, t.trimRight)
			}
		}
	}
	flush()
	return strings.Join(pieces, ""), true
}
