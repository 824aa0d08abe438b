package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLogprobTokensAreTheText: each log-probability token is the text it
// adds (a SentencePiece piece keeps its leading space, which decoding it
// alone drops): chat's bytes joined are the message's bytes, completions'
// text_offset indexes the returned text where its token starts, echoed or
// not, streamed or not; greedy top_logprobs list the chosen token as the
// same text (issue #42 item 2).
func TestLogprobTokensAreTheText(t *testing.T) {
	const prompt = "Hello, world. The vehicles collaborate"
	for _, s := range everyModel(t) {
		ts := s.ts
		t.Run(s.name, func(t *testing.T) {
			chat := ts.call(t, "POST", "/v1/chat/completions", map[string]any{"messages": []map[string]any{{"role": "user", "content": "Hello, who are you?"}},
				"max_tokens": 12, "temperature": 0, "logprobs": true, "top_logprobs": 3}, http.StatusOK)
			msg := choice0(t, chat)["message"].(map[string]any)["content"].(string)
			var joined []byte
			for _, c := range choice0(t, chat)["logprobs"].(map[string]any)["content"].([]any) {
				lp := c.(map[string]any)
				b := intBytes(lp["bytes"])
				joined = append(joined, b...)
				if s := lp["token"].(string); !strings.ContainsRune(s, '\uFFFD') {
					require.Equal(t, s, string(b), "a whole-character token is its bytes")
				}
				top := lp["top_logprobs"].([]any)[0].(map[string]any)
				require.Equal(t, lp["token"], top["token"], "greedy: the first alternative is the chosen token, rendered alike")
				require.Equal(t, lp["bytes"], top["bytes"])
			}
			require.Equal(t, msg, string(joined), "bytes joined are the message")

			for _, tc := range []struct {
				name string
				body map[string]any
			}{
				{"generated", map[string]any{"prompt": prompt}},
				{"echo", map[string]any{"prompt": prompt, "echo": true}},
				{"echo ids", map[string]any{"prompt": ts.tokenize(t, prompt), "echo": true}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					body := map[string]any{"max_tokens": 8, "temperature": 0, "logprobs": 2}
					for k, v := range tc.body {
						body[k] = v
					}
					out := ts.call(t, "POST", "/v1/completions", body, http.StatusOK)
					c := choice0(t, out)
					full := c["text"].(string)
					if tc.body["echo"] == nil {
						full = prompt + full
					} else if tc.name == "echo" {
						require.True(t, strings.HasPrefix(full, prompt))
					}
					lp := c["logprobs"].(map[string]any)
					checkOffsets(t, []rune(full), lp)

					body["stream"] = true
					var tokens, offsets []any
					for _, ch := range streamChunks(t, ts, "/v1/completions", body) {
						if l, ok := choice0(t, ch)["logprobs"].(map[string]any); ok {
							tokens = append(tokens, l["tokens"].([]any)...)
							offsets = append(offsets, l["text_offset"].([]any)...)
						}
					}
					require.Equal(t, lp["tokens"], tokens, "streamed")
					require.Equal(t, lp["text_offset"], offsets, "streamed")
				})
			}
		})
	}
}

// checkOffsets: every token without a split character reads in text at
// its offset, offsets never go back, and the tokens joined are the text
// from the first one's offset when none is split.
func checkOffsets(t *testing.T, text []rune, lp map[string]any) {
	t.Helper()
	tokens, offsets := lp["tokens"].([]any), lp["text_offset"].([]any)
	require.Len(t, offsets, len(tokens))
	var joined strings.Builder
	split, prev := false, 0
	for i, tok := range tokens {
		s, off := tok.(string), int(offsets[i].(float64))
		joined.WriteString(s)
		require.GreaterOrEqual(t, off, prev, "token %d", i)
		prev = off
		if strings.ContainsRune(s, '\uFFFD') {
			split = true
			continue
		}
		r := []rune(s)
		require.LessOrEqual(t, off+len(r), len(text), "token %d %q at %d", i, s, off)
		require.Equal(t, s, string(text[off:off+len(r)]), "token %d at text_offset %d", i, off)
	}
	if !split && len(offsets) > 0 {
		first := int(offsets[0].(float64))
		require.Equal(t, string(text[first:]), joined.String(), "tokens joined are the text from the first token on")
	}
}

func intBytes(v any) []byte {
	var b []byte
	for _, x := range v.([]any) {
		b = append(b, byte(x.(float64)))
	}
	return b
}

func (s *testServer) tokenize(t *testing.T, text string) []any {
	t.Helper()
	return s.call(t, "POST", "/tokenize", map[string]any{"prompt": text}, http.StatusOK)["tokens"].([]any)
}
