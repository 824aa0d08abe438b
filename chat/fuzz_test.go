package chat

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ardanlabs/jinja"
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

// cyclic are what a template needs to build a value that contains itself.
// The sandbox stops recursion and the printing of such a value, but the
// engine's filters and comparisons (tojson, string, ==) would still recurse
// through it without end, overflowing the Go stack (see doc.go): FuzzParse
// parses such sources but does not render them.
var cyclic = []string{"append", "update", "extend", "insert", "setdefault", "namespace"}

// fuzzLimits keep each fuzzed render short.
var fuzzLimits = Limits{MaxRange: 1000, MaxFrames: 2000, MaxSteps: 10_000, MaxOutput: 1 << 16, Timeout: time.Second}

// FuzzParse parses arbitrary template source, and renders it in the
// sandbox unless it could build a value containing itself: neither may
// panic, and a macro that recurses without end is stopped.
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
		renderNoPanic(t, tpl.WithLimits(fuzzLimits), []Message{{Role: "user", Content: content}, {Role: "assistant", Content: content}})
	})
}

// unbounded are what a template needs to do unbounded work without the
// sandbox: FuzzInstrument renders such sources only in the sandbox.
var unbounded = append([]string{"macro", "call", "range", "*", "center", "indent", "format", "wordwrap", "truncate", "tojson", "loop"}, cyclic...)

// FuzzInstrument: the sandbox's rewriting of a template changes nothing
// it prints. Whatever the engine compiles, Parse compiles too, and where
// the bare engine renders without error the sandbox renders the same.
func FuzzInstrument(f *testing.F) {
	for _, tpl := range fuzzTemplates(f) {
		f.Add(tpl.Source())
	}
	f.Add("{% for m in messages -%}\n  {{- m.role }}\n{% endfor %}\n{%- if add_generation_prompt %} <a>{% endif -%}")
	f.Add("{% raw %}{{ x }}{% for %}{% endraw %}{# {{ y }} #}{{ '}}' ~ \"%}\" }}")
	f.Fuzz(func(t *testing.T, src string) {
		bare, err := jinja.Compile(src)
		if err != nil {
			return
		}
		tpl, err := Parse(src)
		if err != nil {
			t.Fatalf("engine compiles %q, Parse does not: %v", src, err)
		}
		for _, w := range unbounded {
			if strings.Contains(src, w) {
				return
			}
		}
		msgs := []Message{{Role: "user", Content: "Hi"}, {Role: "assistant", Content: "Yo"}}
		want, err := func() (out string, err error) {
			defer recoverPanic(&err, "")
			return bare.RenderValues(map[string]jinja.Value{
				"messages": jinja.NewList([]jinja.Value{
					jinja.FromGoValue(map[string]any{"role": "user", "content": "Hi"}),
					jinja.FromGoValue(map[string]any{"role": "assistant", "content": "Yo"}),
				}),
				"add_generation_prompt": jinja.NewBool(true),
				"tools":                 jinja.None(),
				"documents":             jinja.None(),
				"raise_exception":       raiseException,
				"bos_token":             jinja.NewString("<s>"),
			})
		}()
		if err != nil {
			return
		}
		got, err := tpl.Render(msgs, Options{AddGenerationPrompt: true, BOSToken: "<s>"})
		if err != nil {
			t.Fatalf("Render(%q): %v; the bare engine renders %q", src, err, want)
		}
		if got != want {
			t.Fatalf("Render(%q) = %q, the bare engine renders %q", src, got, want)
		}
	})
}
