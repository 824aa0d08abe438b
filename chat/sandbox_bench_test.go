package chat

import (
	"strings"
	"testing"

	"github.com/ardanlabs/jinja"
)

// BenchmarkRender is the sandbox's cost on the peer table's real
// templates: a 20-message conversation rendered by Render (guards in the
// source) and by the bare engine from the same source.
func BenchmarkRender(b *testing.B) {
	var msgs []Message
	for i := range 10 {
		msgs = append(msgs, Message{Role: "user", Content: strings.Repeat("question ", 20+i)},
			Message{Role: "assistant", Content: strings.Repeat("answer ", 30+i)})
	}
	list := make([]jinja.Value, len(msgs))
	for i, m := range msgs {
		d := jinja.NewDict()
		d.AsDict().Set("role", jinja.NewString(m.Role))
		d.AsDict().Set("content", jinja.NewString(m.Content))
		list[i] = d
	}
	for _, l := range loadPeerTemplates(b, readPeerTable(b)) {
		bare, err := jinja.Compile(l.tpl.Source())
		if err != nil {
			b.Fatal(err)
		}
		opt := l.opt
		opt.AddGenerationPrompt = true
		b.Run(l.name+"/sandbox", func(b *testing.B) {
			for b.Loop() {
				if _, err := l.tpl.Render(msgs, opt); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(l.name+"/bare", func(b *testing.B) {
			vars := map[string]jinja.Value{"messages": jinja.NewList(list), "add_generation_prompt": jinja.NewBool(true),
				"tools": jinja.None(), "documents": jinja.None(), "raise_exception": raiseException,
				"bos_token": jinja.NewString(opt.BOSToken), "eos_token": jinja.NewString(opt.EOSToken)}
			for b.Loop() {
				if _, err := bare.RenderValues(vars); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
