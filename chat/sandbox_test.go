package chat

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ardanlabs/jinja"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The reproductions of issue 43 item 1 and their relatives: each is an
// error wrapping ErrLimit, and the process survives to say so.
func TestSandboxLimits(t *testing.T) {
	long := strings.Repeat("a", 3000)
	tests := []struct {
		name, src, content string
		want               string
	}{
		{"recursive macro", `{% macro f(n) %}{% if n < (messages[-1]['content']|length) * 1000 %}{{ f(n+1) }}{% endif %}{% endmacro %}{{ f(0) }}{{ messages[-1]['content'] }}`, long, "recursion too deep"},
		{"macro without base case", `{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}`, "hi", "recursion too deep"},
		{"range 10**9", `{% for i in range(10**9) %}{% endfor %}`, "hi", "range of about 1000000000 items, at most 100000"},
		{"range printed", `{{ range(10**9) }}`, "hi", "at most 100000"},
		{"string repetition", `{{ 'x' * 100000000 }}`, "hi", "output beyond"},
		{"repetition in a loop", `{% for i in range(1000) %}{{ messages[0].content * 10000 }}{% endfor %}`, "hi", "output beyond"},
		{"doubling", `{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{{ ns.s }}{% endfor %}`, "hi", "output beyond"},
		{"text in a loop", `{% for i in range(100000) %}` + strings.Repeat("t", 100) + `{% endfor %}`, "hi", "output beyond"},
		{"nested loops", `{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}`, "hi", "more than 1000000 loop iterations"},
		{"list containing itself", `{% set l = [1] %}{% set _ = l.append(l) %}{{ l }}`, "hi", "containing itself"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tpl, err := Parse(tc.src)
			require.NoError(t, err)
			_, err = tpl.Render([]Message{{Role: "user", Content: tc.content}}, Options{})
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrLimit)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// A render that outlives its Timeout stops at its next step.
func TestSandboxTimeout(t *testing.T) {
	tpl, err := Parse(`{% for i in range(100000) %}{{ messages[0].content|length }}{% endfor %}`)
	require.NoError(t, err)
	lim := DefaultLimits
	lim.Timeout = -time.Second // already past: the first step stops it
	_, err = tpl.WithLimits(lim).Render([]Message{{Role: "user", Content: "x"}}, Options{})
	require.ErrorIs(t, err, ErrLimit)
	assert.Contains(t, err.Error(), "longer than")
}

// What the sandbox allows renders as the bare engine renders it: the
// guards print nothing and keep every trim flag's effect.
func TestSandboxSameOutput(t *testing.T) {
	srcs := []string{
		"{% for m in messages %}\n  {{ m.role }}: {{ m.content }}\n{% endfor %}\n",
		"{%- for m in messages -%}\n  {{- m.role -}}\n{%- endfor -%}\n end",
		"{% macro f(x) -%}\n  [{{ x }}]\n{%- endmacro %}\n{{ f(1) }}{{ f('a') }}\n",
		"{% raw %}{{ not a var }}{% for %}{% endraw %}{{ 'x' }}",
		"{# {{ comment }} #}{{ '}}' }}{{ \"%}\" }}",
		"{% for i in range(3) %}{{ i }}{% else %}none{% endfor %}{% for i in range(10, 0, -3) %}{{ i }}{% endfor %}",
		"{{ range(4) }}|{{ [1, [2, {'a': 3}]] }}|{{ none }}|{{ undefined_var }}",
		"{% for m in messages %}{% if loop.first %}{{ bos_token }}{% endif %}<{{ m.role }}>{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}",
	}
	msgs := []Message{{Role: "user", Content: "Hi"}, {Role: "assistant", Content: "Hello"}}
	for _, src := range srcs {
		bare, err := jinja.Compile(src)
		require.NoError(t, err, src)
		vars := map[string]jinja.Value{
			"messages": jinja.NewList([]jinja.Value{
				jinja.FromGoValue(map[string]any{"role": "user", "content": "Hi"}),
				jinja.FromGoValue(map[string]any{"role": "assistant", "content": "Hello"}),
			}),
			"add_generation_prompt": jinja.NewBool(true),
			"bos_token":             jinja.NewString("<s>"),
		}
		want, err := bare.RenderValues(vars)
		require.NoError(t, err, src)
		tpl, err := Parse(src)
		require.NoError(t, err, src)
		got, err := tpl.Render(msgs, Options{AddGenerationPrompt: true, BOSToken: "<s>"})
		require.NoError(t, err, src)
		assert.Equal(t, want, got, src)
	}
}

func TestParseTooLong(t *testing.T) {
	_, err := Parse(strings.Repeat("x", MaxTemplateBytes+1))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "at most 1048576")
	assert.False(t, errors.Is(err, ErrLimit))
}
