package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/generation"
	"github.com/llorch/llorch-check/references"
	"github.com/llorch/llorch-check/server"
)

func choice0(t *testing.T, out map[string]any) map[string]any {
	t.Helper()
	ch := out["choices"].([]any)
	require.Len(t, ch, 1)
	return ch[0].(map[string]any)
}

func floats(t *testing.T, v any) []*float64 {
	t.Helper()
	var out []*float64
	for _, x := range v.([]any) {
		if x == nil {
			out = append(out, nil)
			continue
		}
		f := x.(float64)
		out = append(out, &f)
	}
	return out
}

// TestCompletionsLMEvalRequest is the exact request lm-evaluation-harness
// local-completions sends for log-likelihood, read as it reads it:
// sum(token_logprobs[ctxlen:-1]), greedy from top_logprobs; on GPT-2 and
// every Llama-family model, against its reference set's pairs.
func TestCompletionsLMEvalRequest(t *testing.T) {
	for _, s := range everyModel(t) {
		t.Run(s.name, func(t *testing.T) {
			for i, p := range s.set.Manifest.Loglikelihood {
				ids := slices.Concat(p.ContextTokens, p.ContinuationTokens)
				out := s.ts.call(t, "POST", "/v1/completions", map[string]any{
					"model": s.name, "prompt": [][]int{ids}, "max_tokens": 1, "logprobs": 1, "echo": true, "temperature": 0,
				}, http.StatusOK)
				require.Equal(t, "text_completion", out["object"])
				c := choice0(t, out)
				lp := c["logprobs"].(map[string]any)
				tlp := floats(t, lp["token_logprobs"])
				require.Len(t, tlp, len(ids)+1, "prompt positions plus the generated token")
				require.Nil(t, tlp[0], "the first prompt position has no log-probability")
				ctxlen := len(p.ContextTokens)
				sum := 0.0
				for _, v := range tlp[ctxlen : len(tlp)-1] {
					sum += *v
				}
				require.InDelta(t, p.LL, sum, 1e-4, "pair %d", i)
				tokens := lp["tokens"].([]any)
				tops := lp["top_logprobs"].([]any)
				require.Nil(t, tops[0])
				greedy := true
				for j := ctxlen; j < len(tokens)-1; j++ {
					top := tops[j].(map[string]any)
					best, bestV := "", -1e300
					for k, v := range top {
						if v.(float64) > bestV {
							best, bestV = k, v.(float64)
						}
					}
					if best != tokens[j] {
						greedy = false
					}
				}
				require.Equal(t, p.IsGreedy, greedy, "pair %d", i)
				require.Len(t, lp["text_offset"], len(ids)+1)
			}
		})
	}
}

// TestCompletionsEchoPromptOnly: echo with max_tokens 0 returns the prompt
// as sent, its tokens (the BOS the model's files ask for included) and
// their log-probabilities, which sum to an independent forward pass's.
func TestCompletionsEchoPromptOnly(t *testing.T) {
	for _, s := range everyModel(t) {
		t.Run(s.name, func(t *testing.T) {
			i := slices.IndexFunc(s.set.Manifest.Loglikelihood, func(p references.Loglikelihood) bool { return p.Context == "The capital of France is" })
			require.GreaterOrEqual(t, i, 0)
			p := s.set.Manifest.Loglikelihood[i] // and " Paris", one token
			require.Len(t, p.ContinuationTokens, 1)
			prompt := p.Context + p.Continuation
			out := s.ts.call(t, "POST", "/v1/completions", map[string]any{
				"prompt": prompt, "max_tokens": 0, "echo": true, "logprobs": 0,
			}, http.StatusOK)
			c := choice0(t, out)
			require.Equal(t, prompt, c["text"])
			require.Equal(t, "length", c["finish_reason"])
			lp := c["logprobs"].(map[string]any)
			tlp := floats(t, lp["token_logprobs"])
			ids := s.tok.EncodePrompt(prompt)
			require.Len(t, tlp, len(ids))
			require.Nil(t, tlp[0])
			sum := 0.0
			for _, v := range tlp[1:] {
				sum += *v
			}
			require.InDelta(t, forwardLL(t, s.m, ids), sum, 1e-4)
			if slices.Equal(ids, slices.Concat(p.ContextTokens, p.ContinuationTokens)) {
				require.InDelta(t, p.LL, *tlp[len(ids)-1], 1e-4, "the reference's one continuation token")
			}
			checkOffsets(t, []rune(prompt), lp)
			u := out["usage"].(map[string]any)
			require.EqualValues(t, len(ids), u["prompt_tokens"])
			require.EqualValues(t, 0, u["completion_tokens"])
		})
	}
}

// TestCompletionsGreedy: a text prompt, its token ids and a list of one
// text give the reference's greedy completion, with log-probabilities
// whose offsets count from the prompt's start.
func TestCompletionsGreedy(t *testing.T) {
	for _, s := range everyModel(t) {
		t.Run(s.name, func(t *testing.T) {
			rs := s.textResults(t)
			r := rs[len(rs)-1]
			c, _ := s.set.Case(r.Case)
			want := s.continuation(t, r)
			// Token ids' text is their decoding, a BOS's "<s>" included, as
			// Hugging Face's decode and vLLM read them.
			idsText, err := s.tok.Decode(c.Tokens)
			require.NoError(t, err)
			for _, prompt := range []struct {
				value any
				text  string
			}{{*c.Prompt, *c.Prompt}, {c.Tokens, idsText}, {[]string{*c.Prompt}, *c.Prompt}} {
				out := s.ts.call(t, "POST", "/v1/completions", map[string]any{
					"prompt": prompt.value, "max_tokens": len(r.Tokens), "temperature": 0, "logprobs": 2}, http.StatusOK)
				ch := choice0(t, out)
				require.Equal(t, want, ch["text"])
				require.Equal(t, "length", ch["finish_reason"])
				lp := ch["logprobs"].(map[string]any)
				require.Len(t, lp["tokens"], len(r.Tokens))
				offsets := lp["text_offset"].([]any)
				require.EqualValues(t, len([]rune(prompt.text)), offsets[0], "offsets count from the prompt's start")
				checkOffsets(t, []rune(prompt.text+want), lp)
				require.Equal(t, s.name, out["model"])
				require.True(t, strings.HasPrefix(out["id"].(string), "cmpl-"))
			}
		})
	}
}

// TestCompletionsMultiplePrompts: each prompt gets its choices, n of them
// (prompt by prompt, indices counting on), and a seed reproduces them all.
func TestCompletionsMultiplePrompts(t *testing.T) {
	for _, s := range everyModel(t) {
		t.Run(s.name, func(t *testing.T) {
			noEOS := map[string]int{fmt.Sprint(s.eos()): -100} // every choice runs its max_tokens
			out := s.ts.call(t, "POST", "/v1/completions", map[string]any{
				"prompt": []string{"Hello", "World"}, "max_tokens": 3, "temperature": 0, "logit_bias": noEOS}, http.StatusOK)
			ch := out["choices"].([]any)
			require.Len(t, ch, 2)
			require.EqualValues(t, 1, ch[1].(map[string]any)["index"])
			require.EqualValues(t, 6, out["usage"].(map[string]any)["completion_tokens"])

			body := map[string]any{"prompt": []string{"Hello", "World"}, "n": 2, "max_tokens": 6, "temperature": 1, "seed": 5, "logit_bias": noEOS}
			a := s.ts.call(t, "POST", "/v1/completions", body, http.StatusOK)
			choices := lmevalChoices(t, a)
			require.Len(t, choices, 4)
			for i, c := range choices {
				require.EqualValues(t, i, c["index"])
			}
			require.NotEqual(t, choices[0]["text"], choices[1]["text"], "a prompt's n choices are sampled apart")
			require.EqualValues(t, 24, a["usage"].(map[string]any)["completion_tokens"])
			require.Equal(t, choices, lmevalChoices(t, s.ts.call(t, "POST", "/v1/completions", body, http.StatusOK)), "the seed reproduces every choice")
		})
	}
}

// TestCompletionsStream: the greedy reference streamed, one chunk a token,
// then the finish reason and the usage.
func TestCompletionsStream(t *testing.T) {
	for _, s := range everyModel(t) {
		t.Run(s.name, func(t *testing.T) {
			rs := s.textResults(t)
			r := rs[len(rs)-1]
			c, _ := s.set.Case(r.Case)
			resp := s.ts.do(t, "POST", "/v1/completions", map[string]any{
				"prompt": *c.Prompt, "max_tokens": len(r.Tokens), "temperature": 0, "stream": true,
				"stream_options": map[string]any{"include_usage": true}})
			defer resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
			sse := newSSEReader(resp.Body)
			text, chunks, finish, sawUsage := "", 0, "", false
			for {
				ev, err := sse.Next()
				require.NoError(t, err)
				require.Equal(t, "message", ev.Name)
				if ev.Data == "[DONE]" {
					_, err := sse.Next()
					require.ErrorIs(t, err, io.EOF)
					break
				}
				var chunk map[string]any
				require.NoError(t, json.Unmarshal([]byte(ev.Data), &chunk))
				if u, ok := chunk["usage"]; ok && u != nil {
					sawUsage = true
					continue
				}
				ch := choice0(t, chunk)
				text += ch["text"].(string)
				if ch["finish_reason"] != nil {
					finish = ch["finish_reason"].(string)
				} else {
					chunks++
				}
			}
			require.Equal(t, s.continuation(t, r), text)
			require.Equal(t, len(r.Tokens), chunks, "one chunk per token")
			require.Equal(t, "length", finish)
			require.True(t, sawUsage)
		})
	}
}

func TestModelsTokenizeDetokenize(t *testing.T) {
	ts := start(t, server.Config{})
	models := ts.call(t, "GET", "/v1/models", nil, http.StatusOK)
	require.Equal(t, "list", models["object"])
	require.Equal(t, "tiny-gpt2", models["data"].([]any)[0].(map[string]any)["id"])

	tok := ts.call(t, "POST", "/tokenize", map[string]any{"prompt": "Hello."}, http.StatusOK)
	require.Equal(t, []any{15496.0, 13.0}, tok["tokens"])
	special := ts.call(t, "POST", "/tokenize", map[string]any{"prompt": "<|endoftext|>", "special": true}, http.StatusOK)
	require.Equal(t, []any{float64(generation.EOSToken)}, special["tokens"])
	ordinary := ts.call(t, "POST", "/tokenize", map[string]any{"prompt": "<|endoftext|>"}, http.StatusOK)
	require.Greater(t, len(ordinary["tokens"].([]any)), 1)

	detok := ts.call(t, "POST", "/detokenize", map[string]any{"tokens": []int{15496, 13}}, http.StatusOK)
	require.Equal(t, "Hello.", detok["prompt"])
	e := ts.call(t, "POST", "/detokenize", map[string]any{"tokens": []int{15496, 99999999}}, http.StatusBadRequest)
	require.Equal(t, "tokens[1]", e["error"].(map[string]any)["param"])
}

func TestCompletionsErrors(t *testing.T) {
	ts := start(t, server.Config{})
	e := ts.call(t, "POST", "/v1/completions", map[string]any{"prompt": "x", "model": "gpt-4"}, http.StatusNotFound)
	require.Equal(t, "model_not_found", e["error"].(map[string]any)["code"])
	e = ts.call(t, "POST", "/v1/completions", map[string]any{"prompt": "x", "n": 0, "temperature": 3}, http.StatusBadRequest)
	msg := e["error"].(map[string]any)["message"].(string)
	require.Contains(t, msg, "n:")
	require.Contains(t, msg, "temperature:")
	require.Equal(t, "invalid_request_error", e["error"].(map[string]any)["type"])
	e = ts.call(t, "POST", "/v1/completions", map[string]any{"prompt": [][]int{{1, -5}}}, http.StatusBadRequest)
	require.Equal(t, "prompt[0][1]", e["error"].(map[string]any)["param"])
	e = ts.call(t, "POST", "/v1/completions", map[string]any{"prompt": make([]int, 120), "max_tokens": 16}, http.StatusBadRequest)
	require.Equal(t, "max_tokens", e["error"].(map[string]any)["param"])
}

// TestCompletionsTokenIDs: vLLM's return_tokens_as_token_ids names every
// token and alternative "token_id:N", so that tokens which decode to the
// same text stay apart; text and offsets are as without it.
func TestCompletionsTokenIDs(t *testing.T) {
	for _, s := range everyModel(t) {
		t.Run(s.name, func(t *testing.T) {
			r := s.set.Manifest.Generation.Results[0]
			c, _ := s.set.Case(r.Case)
			body := map[string]any{"prompt": c.Tokens, "max_tokens": 4, "temperature": 0, "logprobs": 3, "echo": true}
			plain := choice0(t, s.ts.call(t, "POST", "/v1/completions", body, http.StatusOK))
			body["return_tokens_as_token_ids"] = true
			named := choice0(t, s.ts.call(t, "POST", "/v1/completions", body, http.StatusOK))
			require.Equal(t, plain["text"], named["text"])
			lp, plp := named["logprobs"].(map[string]any), plain["logprobs"].(map[string]any)
			require.Equal(t, plp["text_offset"], lp["text_offset"])
			require.Equal(t, plp["token_logprobs"], lp["token_logprobs"])
			tokens := lp["tokens"].([]any)
			want := append(slices.Clone(c.Tokens), r.Tokens[:4]...)
			require.Len(t, tokens, len(want))
			for i, id := range want {
				require.Equal(t, fmt.Sprintf("token_id:%d", id), tokens[i], "token %d", i)
			}
			for i, top := range lp["top_logprobs"].([]any)[1:] {
				m := top.(map[string]any)
				require.GreaterOrEqual(t, len(m), 3, "position %d", i+1)
				for k := range m {
					require.Regexp(t, `^token_id:\d+$`, k)
				}
				require.Contains(t, m, tokens[i+1], "the chosen token is listed")
			}
		})
	}
}
