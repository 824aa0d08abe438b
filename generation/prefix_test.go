package generation_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/generation"
	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/tokenizer"
)

// TestPrefixToken: an empty context conditions on lm-eval's
// prefix_token_id, the BOS of every Llama-family model (not its EOS),
// GPT-2's <|endoftext|>; a vocabulary with neither refuses the pair,
// naming the context, instead of conditioning on GPT-2's id (issue #42
// item 3).
func TestPrefixToken(t *testing.T) {
	type want struct {
		prefix int
		err    bool
	}
	cases := map[string]want{"tiny-gpt2": {prefix: 50256}, "no BOS, no <|endoftext|>": {err: true}}
	toks := map[string]*tokenizer.Tokenizer{"tiny-gpt2": gpt2Tokenizer(t), "no BOS, no <|endoftext|>": byteLevelOnly(t)}
	for _, name := range fixture.Families {
		tok, err := tokenizer.Load(fixture.FamilyModel(name))
		require.NoError(t, err)
		bos, add := tok.BOS()
		require.True(t, add, "%s prompts start with BOS", name)
		require.NotEqual(t, tok.EOT(), bos, "%s: BOS and EOS differ, so the test tells them apart", name)
		toks[name], cases[name] = tok, want{prefix: bos}
	}
	for name, w := range cases {
		t.Run(name, func(t *testing.T) {
			tok := toks[name]
			id, err := generation.PrefixToken(tok)
			for _, context := range []string{"", " \n"} {
				ctx, cont, perr := generation.EncodePair(tok, context, "Hello")
				if w.err {
					require.Error(t, err)
					require.Error(t, perr)
					fe := generation.AsFieldErrors(perr)
					require.Len(t, fe, 1)
					require.Equal(t, "context", fe[0].Field)
					continue
				}
				require.NoError(t, err)
				require.NoError(t, perr)
				require.Equal(t, w.prefix, id)
				require.Equal(t, []int{w.prefix}, ctx, "context %q", context)
				require.Equal(t, tok.EncodeSpecial(context+"Hello"), cont, "context %q moves into the continuation", context)
			}
		})
	}
}

// byteLevelOnly is a byte-level BPE vocabulary of the 256 bytes alone: no
// BOS, no <|endoftext|>.
func byteLevelOnly(t *testing.T) *tokenizer.Tokenizer {
	t.Helper()
	vocab := map[string]int{}
	n := 0
	for b := range 256 {
		if b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE {
			vocab[string(rune(b))] = b
		} else {
			vocab[string(rune(256+n))] = b
			n++
		}
	}
	tj := map[string]any{
		"model":          map[string]any{"type": "BPE", "vocab": vocab, "merges": []string{}},
		"pre_tokenizer":  map[string]any{"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
		"decoder":        map[string]any{"type": "ByteLevel"},
		"added_tokens":   []any{},
		"post_processor": nil,
	}
	b, err := json.Marshal(tj)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "tokenizer.json")
	require.NoError(t, os.WriteFile(path, b, 0o644))
	tok, err := tokenizer.LoadTokenizerJSON(path)
	require.NoError(t, err)
	_, add := tok.BOS()
	require.False(t, add)
	require.Negative(t, tok.EOT())
	return tok
}
