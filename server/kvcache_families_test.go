package server_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/server"
)

// promptIn is tokenPrompt's ids within a model's vocabulary.
func promptIn(s servedModel, n, seed int) []int {
	p := tokenPrompt(n, seed)
	for i := range p {
		p[i] %= s.m.Config.VocabSize
	}
	return p
}

// The prefix cache answers as recomputation does on every family. The
// prompts run past the tiny models' sliding window of 24 (Mistral, Gemma
// 2 and 3) and share 48 of their positions, so a cached block that lies
// wholly outside the window of the position reading it must still be
// masked as recomputation masks it, and one inside must still be read.
// Shorter prompts sharing their start are reused by every family but
// Phi-3 longrope, whose short prompts' keys are rotated otherwise.
func TestPrefixCacheSameAnswersFamilies(t *testing.T) {
	on := everyModelWith(t, server.Config{PrefixCache: true})
	off := everyModelWith(t, server.Config{})
	for i, s := range on {
		t.Run(s.name, func(t *testing.T) {
			a := promptIn(s, 60, 1)
			b := append(append([]int(nil), a[:48]...), promptIn(s, 9, 2)...)
			ask := func(ts *testServer, prompt []int) (map[string]any, map[string]any) {
				out := ts.call(t, "POST", "/v1/completions", map[string]any{
					"prompt": prompt, "max_tokens": 8, "temperature": 0, "logprobs": 5}, http.StatusOK)
				return choice0(t, out), out["usage"].(map[string]any)
			}
			// c and d stay within Phi-3 longrope's pretrained 32 positions,
			// so its keys for them are rotated short and a's long blocks
			// are not theirs; d's answer crosses to 36 positions.
			c, d := a[:20], a[:28]
			cc, cd := 16.0, 16.0
			if s.m.Config.LongRope != nil {
				cc = 0
			}
			for _, tc := range []struct {
				prompt []int
				cached float64
			}{{a, 0}, {b, 48}, {a, 48}, {b, 48}, {c, cc}, {d, cd}, {a, 48}} {
				got, u := ask(s.ts, tc.prompt)
				want, _ := ask(off[i].ts, tc.prompt)
				require.Equal(t, want, got, "prompt of %d tokens", len(tc.prompt))
				require.Equal(t, map[string]any{"cached_tokens": tc.cached}, u["prompt_tokens_details"], "prompt of %d tokens", len(tc.prompt))
			}
		})
	}
}

// Prompts prefilled in chunks of 4 beside other requests' decode steps
// answer as prompts prefilled alone, on every family: the longest
// prompt (37 tokens) crosses the sliding window of 24 inside a chunk.
func TestChunkedPrefillSameAnswersFamilies(t *testing.T) {
	chunked := everyModelWith(t, server.Config{Parallel: 4, MaxQueue: 4, PrefillChunk: 4})
	alone := everyModelWith(t, server.Config{Parallel: 4})
	for i, s := range chunked {
		t.Run(s.name, func(t *testing.T) {
			bodies := make([][]byte, 4)
			for j := range bodies {
				b, err := json.Marshal(map[string]any{"prompt": promptIn(s, 10+9*j, 10+j), "max_tokens": 12, "temperature": 0, "logprobs": 3})
				require.NoError(t, err)
				bodies[j] = b
			}
			want := concurrentChoices(alone[i].ts, bodies)
			for j := range want {
				require.NotEmpty(t, want[j], "request %d alone", j)
			}
			require.Equal(t, want, concurrentChoices(s.ts, bodies))
		})
	}
}

// concurrentChoices sends every body to /v1/completions at once and
// returns each answer's single choice as JSON ("" where one failed).
func concurrentChoices(ts *testServer, bodies [][]byte) []string {
	out := make([]string, len(bodies))
	var wg sync.WaitGroup
	for i, b := range bodies {
		wg.Go(func() {
			resp, err := http.Post(ts.URL+"/v1/completions", "application/json", bytes.NewReader(b))
			if err != nil {
				return
			}
			defer resp.Body.Close()
			var r map[string]any
			if json.NewDecoder(resp.Body).Decode(&r) == nil {
				if ch, ok := r["choices"].([]any); ok && len(ch) == 1 {
					c, _ := json.Marshal(ch[0])
					out[i] = string(c)
				}
			}
		})
	}
	wg.Wait()
	return out
}
