package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/tokenizer"
)

// The prompt lengths (--prompt-tokens, --prefix-tokens, --long-tokens) are
// word counts; they are token counts only if every word is one token after
// a space. The committed tiny model carries GPT-2's real vocabulary.
func TestWordsAreOneTokenEach(t *testing.T) {
	tk, err := tokenizer.Load(fixture.TinyModel())
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
	tk, err := tokenizer.Load(fixture.TinyModel())
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, kind := range []int{kindShort, kindLong, kindPrefix, kindWarmUp} {
		for _, level := range []int{0, 1, 8, 32} {
			for i := range 40 {
				// A prompt's first word is enough to tell them apart here.
				p := prompt(newRNG(1, kind, level, i), 8)
				assert.False(t, seen[p], "kind %d level %d request %d: prompt repeated", kind, level, i)
				seen[p] = true
			}
		}
	}
	for _, n := range []int{32, 200, 1000} {
		p := prompt(newRNG(1, kindLong, 8, 0), n)
		// The first word has no space before it and may split.
		assert.InDelta(t, n, len(tk.Encode(p)), 2, "%d words", n)
	}
	// The same seed and place draw the same prompt: reruns compare.
	assert.Equal(t, prompt(newRNG(1, kindShort, 8, 3), 32), prompt(newRNG(1, kindShort, 8, 3), 32))
	// Each level's long prompt is its own (the bug this test caught sent
	// one long prompt at every level: a cache hit from the second on).
	assert.NotEqual(t, settings{longTokens: 50}.longRequest(1).prompt, settings{longTokens: 50}.longRequest(8).prompt)
	s := settings{scenario: sharedPrefix, prefixTokens: 50, promptTokens: 8}
	a, b := s.shortRequest(8, 0).prompt, s.shortRequest(8, 1).prompt
	assert.Equal(t, s.prefix(), a[:len(s.prefix())], "shared prefix first")
	assert.Equal(t, a[:len(s.prefix())], b[:len(s.prefix())])
	assert.NotEqual(t, a, b)
}
