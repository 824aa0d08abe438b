package grammar

import (
	"fmt"
	"testing"

	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/tokenizer"
)

// BenchmarkConstrainedString is one generation's grammar work for a JSON
// string of n tokens over GPT-2's 50,257 tokens: a mask and an accept per
// token, the words cycling through a few. The cost per token (ns/token)
// must not grow with n; before the tail call it did, the stack growing a
// node per character (16 ms a token at 500 tokens against 5.5 at 100).
func BenchmarkConstrainedString(b *testing.B) {
	tok, err := tokenizer.Load(fixture.TinyModel())
	if err != nil {
		b.Fatal(err)
	}
	tokens := make([][]byte, tok.VocabSize())
	for id := range tokens {
		tokens[id], _ = tok.TokenBytes(id)
	}
	v := NewVocab(tokens, []int{len(tokens) - 1}, nil)
	g, err := FromJSONSchema([]byte(`{"type":"string"}`))
	if err != nil {
		b.Fatal(err)
	}
	var words []int
	for _, w := range []string{" the", " cat", " sat", " on", " mat", "."} {
		words = append(words, tok.Encode(w)...)
	}
	for _, n := range []int{100, 500} {
		b.Run(fmt.Sprintf("tokens=%d", n), func(b *testing.B) {
			for b.Loop() {
				m := g.NewMatcher()
				m.Mask(v)
				if err := m.Accept([]byte(`"`)); err != nil {
					b.Fatal(err)
				}
				for i := range n {
					id := words[i%len(words)]
					if !Allowed(m.Mask(v), id) {
						b.Fatalf("token %d (%q) is not allowed", id, tokens[id])
					}
					if err := m.Accept(tokens[id]); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/token")
		})
	}
}
