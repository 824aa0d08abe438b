package chat

import (
	"errors"
	"strings"
	"testing"
)

// fuzzTemplates are the peer table's templates, parsed, for FuzzRender and
// as FuzzParse's seeds.
func fuzzTemplates(f *testing.F) []*Template {
	f.Helper()
	var out []*Template
	for _, l := range loadPeerTemplates(f, readPeerTable(f)) {
		out = append(out, l.tpl)
	}
	return out
}

// renderNoPanic renders msgs both ways of add_generation_prompt and fails
// if the engine panicked (Render turns a panic into an error wrapping
// errPanic, which is how the fuzzer hears of it).
func renderNoPanic(t *testing.T, tpl *Template, msgs []Message) {
	t.Helper()
	for _, gen := range []bool{false, true} {
		_, err := tpl.Render(msgs, Options{AddGenerationPrompt: gen, BOSToken: "<s>", EOSToken: "</s>"})
		if errors.Is(err, errPanic) {
			t.Fatalf("Render(%q, %q): %v", tpl.Source(), msgs, err)
		}
	}
}

// FuzzRender renders arbitrary message content and roles with the real
// templates: what a client sends must never panic. Errors (a raised
// exception) are fine.
func FuzzRender(f *testing.F) {
	templates := fuzzTemplates(f)
	f.Add(uint8(0), "Hello", "user")
	f.Add(uint8(1), " \u00a0héllo 🌍\ufeff\n", "assistant")
	f.Add(uint8(2), "<think>\nhm\n</think>\n\n4 {{ x }} {% if %}", "tool")
	f.Add(uint8(3), "</think>", "system")
	f.Fuzz(func(t *testing.T, which uint8, content, role string) {
		tpl := templates[int(which)%len(templates)]
		msgs := []Message{
			{Role: "system", Content: content},
			{Role: "user", Content: content},
			{Role: "assistant", Content: content},
			{Role: role, Content: content},
			{Role: "user", Content: content},
		}
		for _, m := range [][]Message{msgs, msgs[1:2], msgs[3:4], nil} {
			renderNoPanic(t, tpl, m)
		}
	})
}

// cyclic are what a template needs to build a value that contains itself
// or to recurse without end. The engine has no recursion limit, so such a
// template overflows the Go stack, a fatal error no recover catches (a
// known limitation of github.com/ardanlabs/jinja v1.8.0; see doc.go):
// FuzzParse parses such sources but does not render them.
var cyclic = []string{"macro", "call", "append", "update", "extend", "insert", "setdefault", "namespace"}

// FuzzParse parses arbitrary template source, and renders it unless it
// could recurse without end: neither may panic.
func FuzzParse(f *testing.F) {
	for _, tpl := range fuzzTemplates(f) {
		f.Add(tpl.Source(), "Hello")
	}
	f.Add("{{ messages[0].content.split('</think>')[-1].strip() | trim }}", "a</think> b ")
	f.Add("{% for m in messages[::-1] %}{{ loop.index0 ~ m.role|upper }}{% endfor %}", "x")
	f.Fuzz(func(t *testing.T, src, content string) {
		tpl, err := Parse(src)
		if errors.Is(err, errPanic) {
			t.Fatalf("Parse(%q): %v", src, err)
		}
		if err != nil {
			return
		}
		for _, w := range cyclic {
			if strings.Contains(src, w) {
				return
			}
		}
		renderNoPanic(t, tpl, []Message{{Role: "user", Content: content}, {Role: "assistant", Content: content}})
	})
}
