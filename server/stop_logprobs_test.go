package server_test

import (
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// TestLogprobsEndAtTheStop: the log-probabilities of a choice a stop
// string ended cover exactly its text, streamed or not, on chat and
// completions, on GPT-2 and every Llama-family tiny model: the tokens of
// the stop string and past it are not listed, and the token the cut
// splits is listed as its part of the text, so the tokens' bytes joined
// are the returned text. The stops are cut from a greedy answer without
// one: a whole token, and the last character of one with the first of
// the next.
func TestLogprobsEndAtTheStop(t *testing.T) {
	messages := []map[string]any{{"role": "user", "content": "Hello, who are you?"}}
	for _, s := range everyModel(t) {
		ts := s.ts
		t.Run(s.name, func(t *testing.T) {
			base := ts.call(t, "POST", "/v1/chat/completions", map[string]any{"messages": messages,
				"max_tokens": 12, "temperature": 0, "logprobs": true}, http.StatusOK)
			full := choice0(t, base)["message"].(map[string]any)["content"].(string)
			var pieces []string
			for _, c := range choice0(t, base)["logprobs"].(map[string]any)["content"].([]any) {
				pieces = append(pieces, string(intBytes(c.(map[string]any)["bytes"])))
			}
			stops := stopsWithin(full, pieces)
			require.NotEmpty(t, stops, "no stop string to cut %q at", full)
			for _, stop := range stops {
				cut := full[:strings.Index(full, stop.text)]
				t.Run(stop.kind, func(t *testing.T) {
					body := map[string]any{"messages": messages, "max_tokens": 12, "temperature": 0, "logprobs": true, "stop": stop.text}
					out := choice0(t, ts.call(t, "POST", "/v1/chat/completions", body, http.StatusOK))
					require.Equal(t, "stop", out["finish_reason"])
					require.Equal(t, cut, out["message"].(map[string]any)["content"])
					got := chatTokenBytes(out["logprobs"])
					require.Equal(t, cut, strings.Join(got, ""), "the tokens' bytes joined are the text")
					require.Len(t, got, stop.tokens, "the tokens that begin before the cut")

					body["stream"] = true
					var text strings.Builder
					var streamed []string
					for _, ch := range streamChunks(t, ts, "/v1/chat/completions", body) {
						if len(ch["choices"].([]any)) == 0 {
							continue
						}
						c := choice0(t, ch)
						if d, ok := c["delta"].(map[string]any); ok {
							s, _ := d["content"].(string)
							text.WriteString(s)
						}
						streamed = append(streamed, chatTokenBytes(c["logprobs"])...)
					}
					require.Equal(t, cut, text.String())
					require.Equal(t, got, streamed, "streamed as answered")
				})
			}

			// Completions: tokens and text_offset end at the stop too.
			prompt := "Hello, world. The vehicles collaborate"
			plain := choice0(t, ts.call(t, "POST", "/v1/completions", map[string]any{"prompt": prompt, "max_tokens": 24,
				"temperature": 0, "logprobs": 1}, http.StatusOK))
			ptext := plain["text"].(string)
			var ptoks []string
			for _, s := range plain["logprobs"].(map[string]any)["tokens"].([]any) {
				ptoks = append(ptoks, s.(string))
			}
			pstops := stopsWithin(ptext, ptoks)
			require.NotEmpty(t, pstops, "no stop string to cut %q at", ptext)
			stop := pstops[len(pstops)-1]
			cut := ptext[:strings.Index(ptext, stop.text)]
			body := map[string]any{"prompt": prompt, "max_tokens": 24, "temperature": 0, "logprobs": 1, "stop": stop.text}
			out := choice0(t, ts.call(t, "POST", "/v1/completions", body, http.StatusOK))
			require.Equal(t, cut, out["text"])
			lp := out["logprobs"].(map[string]any)
			require.Len(t, lp["tokens"], stop.tokens)
			checkOffsets(t, []rune(prompt+cut), lp)
			body["stream"] = true
			var tokens []any
			for _, ch := range streamChunks(t, ts, "/v1/completions", body) {
				if l, ok := choice0(t, ch)["logprobs"].(map[string]any); ok {
					tokens = append(tokens, l["tokens"].([]any)...)
				}
			}
			require.Equal(t, lp["tokens"], tokens, "streamed")
		})
	}
}

// cutStop is a stop string within a greedy answer and how many of its
// tokens begin before the stop's first occurrence.
type cutStop struct {
	kind, text string
	tokens     int
}

// stopsWithin finds, in the answer full whose tokens read pieces, a
// whole token that occurs first where it stands (not the first token, so
// the cut leaves text), and a stop made of a token's last character and
// the next token's first, splitting a token of two or more characters.
// It looks no further than the first split character.
func stopsWithin(full string, pieces []string) []cutStop {
	var out []cutStop
	whole, split := false, false
	at := 0
	for j, p := range pieces {
		next := at + len(p)
		if j+1 >= len(pieces) || !utf8.ValidString(p) || !utf8.ValidString(pieces[j+1]) {
			break
		}
		if pieces[j+1] == "" {
			at = next
			continue
		}
		if !whole && j > 0 && p != "" && strings.Index(full, p) == at {
			out, whole = append(out, cutStop{"a whole token", p, j}), true
		}
		if r := []rune(p); !split && len(r) >= 2 {
			last := string(r[len(r)-1])
			first, _ := utf8.DecodeRuneInString(pieces[j+1])
			s := last + string(first)
			if strings.Index(full, s) == next-len(last) {
				out, split = append(out, cutStop{"a token split by the cut", s, j + 1}), true
			}
		}
		at = next
	}
	return out
}

func chatTokenBytes(lp any) []string {
	m, ok := lp.(map[string]any)
	if !ok || m["content"] == nil {
		return nil
	}
	var out []string
	for _, c := range m["content"].([]any) {
		out = append(out, string(intBytes(c.(map[string]any)["bytes"])))
	}
	return out
}
