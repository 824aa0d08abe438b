package grammar

import (
	"fmt"
	"testing"
)

// benchVocab is a small BPE-like vocabulary: every byte, and words with
// and without a leading space, so a mask walks a trie of real shape.
func benchVocab() (*Vocab, [][]byte) {
	var tokens [][]byte
	for b := range 256 {
		tokens = append(tokens, []byte{byte(b)})
	}
	for i := range 4000 {
		w := fmt.Sprintf("w%03x", i)
		tokens = append(tokens, []byte(w), []byte(" "+w))
	}
	return NewVocab(tokens, []int{len(tokens)}, nil), tokens
}

// BenchmarkConstrainedString is one generation's grammar work for a JSON
// string of n tokens (a mask and an accept per token): the cost per token
// (ns/token) must not grow with n.
func BenchmarkConstrainedString(b *testing.B) {
	v, tokens := benchVocab()
	g, err := FromJSONSchema([]byte(`{"type":"string"}`))
	if err != nil {
		b.Fatal(err)
	}
	word := tokens[256+1] // " w000"
	for _, n := range []int{100, 500} {
		b.Run(fmt.Sprintf("tokens=%d", n), func(b *testing.B) {
			for b.Loop() {
				m := g.NewMatcher()
				m.Mask(v)
				if err := m.Accept([]byte(`"`)); err != nil {
					b.Fatal(err)
				}
				for range n {
					if !Allowed(m.Mask(v), 256+1) {
						b.Fatal("the word is not allowed")
					}
					if err := m.Accept(word); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/token")
		})
	}
}
