package server_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/server"
)

func tokenPrompt(n, seed int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = (i*7919 + seed*104729 + 13) % 50000
	}
	return out
}

// Prompts that share a prefix reuse its KV blocks: usage says how many
// prompt tokens came from the cache, and the completions and their
// log-probabilities are those of a server that recomputes everything.
// Between requests the cache holds nothing for running sequences.
func TestPrefixCacheSameAnswers(t *testing.T) {
	on := start(t, server.Config{PrefixCache: true})
	off := start(t, server.Config{})
	a := tokenPrompt(60, 1)
	b := append(append([]int(nil), a[:48]...), tokenPrompt(9, 2)...)
	ask := func(ts *testServer, prompt []int) (map[string]any, map[string]any) {
		out := ts.call(t, "POST", "/v1/completions", map[string]any{
			"prompt": prompt, "max_tokens": 8, "temperature": 0, "logprobs": 5}, http.StatusOK)
		return choice0(t, out), out["usage"].(map[string]any)
	}
	for _, tc := range []struct {
		prompt []int
		cached float64
	}{
		{a, 0},
		{b, 48}, // three blocks of 16 shared with a
		{a, 48}, // a's fourth block holds a[48:60] and a generated token, so only three match
		{b, 48},
	} {
		got, u := ask(on, tc.prompt)
		want, uOff := ask(off, tc.prompt)
		require.Equal(t, want, got, "prompt of %d tokens", len(tc.prompt))
		require.Equal(t, map[string]any{"cached_tokens": tc.cached}, u["prompt_tokens_details"], "prompt of %d tokens", len(tc.prompt))
		require.NotContains(t, uOff, "prompt_tokens_details", "no prefix cache, no details")
	}
	kv := on.call(t, "GET", "/health", nil, http.StatusOK)["kv_cache"].(map[string]any)
	require.EqualValues(t, 0, kv["used_blocks"], "an idle server's sequences hold no blocks")
	require.Greater(t, kv["idle_blocks"], float64(0), "the prompts' blocks are kept")
	require.EqualValues(t, 144, kv["cached_tokens"])
	require.EqualValues(t, 4*128, kv["max_tokens"], "default: 4 slots × the tiny model's 128 positions")
	kvOff := off.call(t, "GET", "/health", nil, http.StatusOK)["kv_cache"].(map[string]any)
	require.EqualValues(t, 0, kvOff["used_blocks"])
	require.EqualValues(t, 0, kvOff["idle_blocks"])
	blockBytes := kv["bytes"].(float64) / (kv["idle_blocks"].(float64) + kv["spare_blocks"].(float64))
	require.Equal(t, kvOff["spare_blocks"].(float64)*blockBytes, kvOff["bytes"], "without a prefix cache an idle server maps only spares")
	require.Eventually(t, func() bool {
		return off.call(t, "GET", "/health", nil, http.StatusOK)["kv_cache"].(map[string]any)["bytes"] == float64(0)
	}, 10*time.Second, 50*time.Millisecond, "an idle server gives its KV memory back")
	require.Equal(t, 5*blockBytes, kvOff["peak_bytes"], "one request at a time, 60+8 positions at most: 5 blocks at the peak")
	require.GreaterOrEqual(t, kv["peak_bytes"], kv["bytes"])

	resp := on.do(t, "GET", "/metrics", nil)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	for _, line := range []string{`llorch_prompt_tokens_cached_total{model_name="tiny-gpt2"} 144`, `llorch_kv_cache_blocks_used{model_name="tiny-gpt2"} 0`,
		`llorch_request_queue_time_seconds_count{model_name="tiny-gpt2"} 4`, `llorch_request_prefill_time_seconds_count{model_name="tiny-gpt2"} 4`} {
		require.Contains(t, string(body), line+"\n")
	}
}

// A bounded KV cache refuses a request it could never hold, naming the
// field, and makes requests that fit one at a time wait for each other
// instead of failing.
func TestKVCacheBound(t *testing.T) {
	ts := start(t, server.Config{Parallel: 3, MaxQueue: 4, KVCacheTokens: 64})
	out := ts.call(t, "POST", "/v1/completions", map[string]any{
		"prompt": tokenPrompt(10, 3), "max_tokens": 100, "temperature": 0}, http.StatusBadRequest)
	e := out["error"].(map[string]any)
	require.Equal(t, "max_tokens", e["param"], "the prompt alone fits: max_tokens is what does not")
	require.Contains(t, e["message"], "plus max_tokens 100 needs 110 positions; the server's KV cache holds 64")

	// Without max_tokens (as the OpenAI SDKs send a chat), the cache, not
	// the context, bounds the default: the prompt and the answer fill it.
	for _, route := range []struct {
		path string
		body map[string]any
	}{
		{"/v1/chat/completions", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "Hi"}}, "temperature": 0, "logit_bias": map[string]any{"50256": -100}}},
	} {
		out := ts.call(t, "POST", route.path, route.body, http.StatusOK)
		usage := out["usage"].(map[string]any)
		require.Equal(t, float64(64), usage["prompt_tokens"].(float64)+usage["completion_tokens"].(float64), route.path)
		require.Equal(t, "length", out["choices"].([]any)[0].(map[string]any)["finish_reason"], route.path)
	}

	// Three requests of 48 positions (3 blocks of 16) where 4 blocks fit:
	// they run one after another, none fails.
	var wg sync.WaitGroup
	status := make([]int, 3)
	for i := range status {
		body, err := json.Marshal(map[string]any{"prompt": tokenPrompt(8, 4+i), "max_tokens": 40, "temperature": 0})
		require.NoError(t, err)
		wg.Go(func() {
			resp, err := http.Post(ts.URL+"/v1/completions", "application/json", bytes.NewReader(body))
			if err == nil {
				status[i] = resp.StatusCode
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	require.Equal(t, []int{200, 200, 200}, status)
	kv := ts.call(t, "GET", "/health", nil, http.StatusOK)["kv_cache"].(map[string]any)
	require.EqualValues(t, 0, kv["used_blocks"])
	require.Equal(t, "--kv-cache-tokens", kv["budget"], "/health says why the cache holds what it does")

	derived := start(t, server.Config{Parallel: 2, KVCacheTokens: 96, KVCacheBudget: "the memory left after the weights: ..."})
	kv = derived.call(t, "GET", "/health", nil, http.StatusOK)["kv_cache"].(map[string]any)
	require.Equal(t, "the memory left after the weights: ...", kv["budget"])
	require.EqualValues(t, 96, kv["max_tokens"])
	plain := start(t, server.Config{Parallel: 2})
	kv = plain.call(t, "GET", "/health", nil, http.StatusOK)["kv_cache"].(map[string]any)
	require.Regexp(t, `^--parallel 2 × context \d+$`, kv["budget"])
}

// The choices of an n > 1 request share the prompt's blocks: the second
// and later take the prompt's full blocks from the cache, and answer as
// the first does; sampled with a seed, choice k is the request with seed
// + k. On GPT-2 and every Llama-family model.
func TestChoicesSharePromptBlocks(t *testing.T) {
	for _, s := range everyModelWith(t, server.Config{PrefixCache: true}) {
		ts := s.ts
		// tokenPrompt's ids, within the model's vocabulary.
		prompt := func(n, seed int) []int {
			p := tokenPrompt(n, seed)
			for i := range p {
				p[i] %= s.m.Config.VocabSize
			}
			return p
		}
		t.Run(s.name, func(t *testing.T) {
			out := ts.call(t, "POST", "/v1/completions", map[string]any{
				"prompt": prompt(40, 7), "max_tokens": 4, "temperature": 0, "n": 3}, http.StatusOK)
			u := out["usage"].(map[string]any)
			require.EqualValues(t, 40, u["prompt_tokens"], "the prompt counts once")
			require.Equal(t, map[string]any{"cached_tokens": float64(0)}, u["prompt_tokens_details"], "the first choice found nothing cached")
			kv := ts.call(t, "GET", "/health", nil, http.StatusOK)["kv_cache"].(map[string]any)
			require.EqualValues(t, 2*32, kv["cached_tokens"], "choices 2 and 3 reused the prompt's two full blocks of 16")
			ch := out["choices"].([]any)
			require.Len(t, ch, 3)
			for i := 1; i < 3; i++ {
				require.Equal(t, ch[0].(map[string]any)["text"], ch[i].(map[string]any)["text"], "greedy choice %d", i)
			}
			sampled := func(n, seed int) []any {
				out := ts.call(t, "POST", "/v1/completions", map[string]any{
					"prompt": prompt(20, 8), "max_tokens": 6, "temperature": 1, "seed": seed, "n": n}, http.StatusOK)
				return out["choices"].([]any)
			}
			two := sampled(2, 5)
			require.EqualValues(t, 1, two[1].(map[string]any)["index"])
			require.Equal(t, sampled(1, 5)[0].(map[string]any)["text"], two[0].(map[string]any)["text"])
			require.Equal(t, sampled(1, 6)[0].(map[string]any)["text"], two[1].(map[string]any)["text"])
		})
	}
}
