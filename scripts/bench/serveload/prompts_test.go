package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/tokenizer"
)

// The prompt lengths (--prompt-tokens, --prefix-tokens, --long-tokens) are
// word counts; they are token counts only if every word is one token after
// a space. The committed tiny model carries GPT-2's real vocabulary.
func TestWordsAreOneTokenEach(t *testing.T) {
	tk, err := tokenizer.Load("../../../testdata/tiny-gpt2")
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, w := range words {
		assert.False(t, seen[w], "%q listed twice", w)
		seen[w] = true
		assert.Len(t, tk.Encode(" "+w), 1, "%q", w)
	}
	assert.GreaterOrEqual(t, len(words), 200, "fewer words make chance shared prefixes likelier")
}

func TestPromptsAreDistinctAndSized(t *testing.T) {
	tk, err := tokenizer.Load("../../../testdata/tiny-gpt2")
	require.NoError(t, err)
	seen := map[string]bool{}
	for level, n := range map[int]int{1: 32, 8: 32, 32: 1000} {
		for i := range 40 {
			p := prompt(newRNG(1, level, i), n)
			assert.False(t, seen[p], "prompt repeated")
			seen[p] = true
			// The first word has no space before it and may split.
			assert.InDelta(t, n, len(tk.Encode(p)), 2, "level %d request %d", level, i)
		}
	}
}
