package generation

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"weak"

	"github.com/llorch/llorch-check/grammar"
	"github.com/llorch/llorch-check/tokenizer"
)

// ErrGrammarDeadEnd is Generate's error when no token of the vocabulary
// can continue a constrained text (a grammar needing characters no token
// spells): the request's fault, not the model's.
var ErrGrammarDeadEnd = errors.New("no token of the vocabulary continues the text the grammar allows")

// constraint follows one generation through Request.Grammar.
type constraint struct {
	m      *grammar.Matcher
	v      *grammar.Vocab
	tok    *tokenizer.Tokenizer
	masked []float32
}

func newConstraint(g *grammar.Grammar, tok *tokenizer.Tokenizer, eos []int) *constraint {
	return &constraint{m: g.NewMatcher(), v: vocabFor(tok, eos), tok: tok}
}

// logits returns the step's logits with every token the grammar does not
// allow next at -Inf.
func (c *constraint) logits(logits []float32) ([]float32, error) {
	if cap(c.masked) < len(logits) {
		c.masked = make([]float32, len(logits))
	}
	c.masked = c.masked[:len(logits)]
	if MaskLogits(c.masked, logits, c.m.Mask(c.v)) == 0 {
		return nil, ErrGrammarDeadEnd
	}
	return c.masked, nil
}

// accept moves the grammar past a chosen token (not EOS, which ends it).
func (c *constraint) accept(id int) error {
	b, err := c.tok.TokenBytes(id)
	if err == nil {
		err = c.m.Accept(b)
	}
	return err
}

// MaskLogits writes logits into dst with the tokens mask does not allow
// at -Inf, and returns how many it allows. The logit processors then give
// the masked tokens probability 0 and the others the odds they had: every
// processor before truncation acts token by token, and softmax
// renormalises.
func MaskLogits(dst, logits []float32, mask []uint64) int {
	n := 0
	neg := float32(math.Inf(-1))
	for i, v := range logits {
		if grammar.Allowed(mask, i) {
			dst[i] = v
			n++
		} else {
			dst[i] = neg
		}
	}
	return n
}

// vocabs holds one grammar.Vocab per live tokenizer and EOS list: a trie
// of a 50k-token vocabulary takes tens of milliseconds to build. The key
// holds the tokenizer weakly and its entry goes when the tokenizer does.
var vocabs sync.Map // vocabKey -> *grammar.Vocab

type vocabKey struct {
	tok weak.Pointer[tokenizer.Tokenizer]
	eos string
}

func vocabFor(tok *tokenizer.Tokenizer, eos []int) *grammar.Vocab {
	key := vocabKey{weak.Make(tok), fmt.Sprint(eos)}
	if v, ok := vocabs.Load(key); ok {
		return v.(*grammar.Vocab)
	}
	tokens := make([][]byte, tok.VocabSize())
	for id := range tokens {
		tokens[id], _ = tok.TokenBytes(id) // nil for an id outside the vocabulary: never allowed
	}
	never := slices.DeleteFunc(tok.SpecialIDs(), func(id int) bool { return slices.Contains(eos, id) })
	v, loaded := vocabs.LoadOrStore(key, grammar.NewVocab(tokens, eos, never))
	if !loaded {
		runtime.AddCleanup(tok, func(k vocabKey) { vocabs.Delete(k) }, key)
	}
	return v.(*grammar.Vocab)
}
