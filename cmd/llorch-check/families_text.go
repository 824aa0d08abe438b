package main

import (
	"strings"
	"unicode/utf8"

	"github.com/llorch/llorch-check/model"
)

// families names every architecture the model package registers, for the
// commands' help: "GPT-2, or the Llama family: llama, qwen2, ..., and the
// mixtures of experts qwen3_moe and mixtral". Made from the registry, so a
// family added there is named without touching the help.
func families() string {
	var dense, experts []string
	for _, a := range model.Architectures {
		switch {
		case a.Name == model.ArchGPT2:
		case a.Experts():
			experts = append(experts, a.Name)
		default:
			dense = append(dense, a.Name)
		}
	}
	s := "GPT-2, or the Llama family: " + strings.Join(dense, ", ")
	if len(experts) > 0 {
		s += ", and the mixtures of experts " + andList(experts)
	}
	return s
}

// andList is "a", "a and b", "a, b and c".
func andList(xs []string) string {
	if len(xs) < 2 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}

// reflow joins a paragraph's lines and breaks them again at width 78, for
// a help paragraph with a generated list in it.
func reflow(paragraph string) string {
	var b strings.Builder
	n := 0
	for _, w := range strings.Fields(paragraph) {
		switch {
		case n == 0:
		case n+1+utf8.RuneCountInString(w) > 78:
			b.WriteByte('\n')
			n = 0
		default:
			b.WriteByte(' ')
			n++
		}
		b.WriteString(w)
		n += utf8.RuneCountInString(w)
	}
	return b.String()
}
