package probe

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/tokenizer"
)

// TestOllamaTokenIDs: Ollama names a token by its text with each invalid
// UTF-8 byte made U+FFFD (seen from 0.17.4: token 47703, bytes
// a9 b6 e6 a5 b5, came back as "\ufffd\ufffd極"); the id comes back
// through the same lossy key where one token has it, and where several
// share it the id stays unknown rather than guessed.
func TestOllamaTokenIDs(t *testing.T) {
	tok, err := tokenizer.Load(fixture.TinyModel())
	require.NoError(t, err)
	e, err := newOllamaEngine(&prober{opt: Options{Tokenizer: tok}})
	require.NoError(t, err)
	require.Equal(t, "\ufffd\ufffd極", lossyKey([]byte{0xa9, 0xb6, 0xe6, 0xa5, 0xb5}))
	bytesOf := func(s string) []int {
		var out []int
		for _, b := range []byte(s) {
			out = append(out, int(b))
		}
		return out
	}
	for _, tc := range []struct {
		name string
		tok  ollamaToken
		want int
	}{
		{"plain", ollamaToken{Token: " Hello", Bytes: bytesOf(" Hello")}, 18435},
		{"text only", ollamaToken{Token: "."}, 13},
		{"lossy, unique", ollamaToken{Token: "\ufffd\ufffd極", Bytes: bytesOf("\ufffd\ufffd極")}, 47703},
		{"lossy, shared by every lone high byte", ollamaToken{Token: "\ufffd", Bytes: bytesOf("\ufffd")}, byText},
		{"not a token", ollamaToken{Token: "no such token at all"}, byText},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, e.id(tc.tok))
		})
	}
	_, err = e.text([]int{15496, 13})
	require.NoError(t, err)
	// "Hel" + "lo" decodes to "Hello", which encodes as one token.
	split := append(tok.Encode("Hel"), tok.Encode("lo")...)
	require.Len(t, split, 2)
	_, err = e.text(split)
	require.ErrorIs(t, err, errTextPrompt)
}
