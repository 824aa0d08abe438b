package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/server"
)

func TestHealth(t *testing.T) {
	ts := start(t, server.Config{WorkerID: "w1"})
	h := ts.call(t, "GET", "/health", nil, http.StatusOK)
	require.Equal(t, "healthy", h["status"])
	require.Equal(t, true, h["model_loaded"])
	require.Equal(t, "tiny-gpt2", h["model"])
	require.Equal(t, "w1", h["worker_id"])
	require.Equal(t, "cpu", h["memory_type"])
	require.EqualValues(t, 0, h["vram_bytes"])
	require.Greater(t, h["memory_bytes"].(float64), 0.0)
	// A slot's worst case: the tiny model's 128-position KV cache (128 KiB)
	// and a chunk of 32 scoring rows of 50257 logits (6.4 MB).
	require.Greater(t, h["slot_memory_bytes"].(float64), float64(131072+4*32*50257))
	require.Less(t, h["slot_memory_bytes"].(float64), 16e6)
	require.EqualValues(t, 4, h["parallel"])
	require.EqualValues(t, 50257, h["vocab_size"])
	require.EqualValues(t, 128, h["context_length"])
	require.Contains(t, h, "uptime_seconds")
	require.Equal(t, "skipped", h["validation"].(map[string]any)["status"])
}

func TestHealthWhileLoading(t *testing.T) {
	ts := serve(t, server.New(server.Config{}))
	h := ts.call(t, "GET", "/health", nil, http.StatusServiceUnavailable)
	require.Equal(t, "loading", h["status"])
	require.Equal(t, false, h["model_loaded"])
	require.Equal(t, "loading", ts.call(t, "GET", "/readyz", nil, http.StatusServiceUnavailable)["status"])
	require.Equal(t, "ok", ts.call(t, "GET", "/healthz", nil, http.StatusOK)["status"])
	e := ts.call(t, "POST", "/execute", map[string]any{"job_id": "j", "prompt": "x"}, http.StatusServiceUnavailable)
	require.Equal(t, "NOT_READY", e["error"].(map[string]any)["code"])
}

// TestExecuteGreedyMatchesReferences is the SSE contract on the reference
// cases, on GPT-2 and every Llama-family model: event order, one terminal
// event, the token ids PyTorch's greedy ones and their texts joining to
// its text.
func TestExecuteGreedyMatchesReferences(t *testing.T) {
	for _, s := range everyModel(t) {
		t.Run(s.name, func(t *testing.T) {
			gen := s.set.Manifest.Generation
			for _, want := range s.textResults(t) {
				c, ok := s.set.Case(want.Case)
				require.True(t, ok)
				st := s.ts.execute(t, context.Background(), map[string]any{
					"job_id": "ref-" + want.Case, "prompt": *c.Prompt, "max_tokens": gen.N, "temperature": 0,
				})
				started, tokens, terminal, end := st.run(t)
				require.Equal(t, "ref-"+want.Case, started["job_id"])
				require.Equal(t, s.name, started["model"])
				require.EqualValues(t, len(c.Tokens), started["prompt_tokens"])
				require.Contains(t, started, "seed")
				require.Contains(t, started, "started_at")
				require.Equal(t, "end", terminal)
				ids := []int{}
				for _, tk := range tokens {
					ids = append(ids, int(tk["id"].(float64)))
				}
				require.Equal(t, want.Tokens, ids, "case %s", want.Case)
				require.Equal(t, s.continuation(t, want), tokenText(tokens), "case %s", want.Case)
				require.Equal(t, want.StopReason, end["stop_reason"])
				require.EqualValues(t, len(want.Tokens), end["tokens_out"])
				require.Nil(t, end["stop_sequence_matched"])
				require.Contains(t, end, "decode_time_ms")
			}
		})
	}
}

// TestExecuteSeedsReproduce: without a seed one is chosen and reported,
// and replaying it reproduces the sampled tokens; another seed does not.
// The other seed is compared on two fixed seeds, not on the drawn one's
// neighbour: six tokens of a peaked tiny model can come out the same for
// two seeds (tiny-llama-gemma3 for 4 of 99 neighbouring pairs, and once in
// CI on tiny-llama-gemma), and fixed seeds give the same tokens on every
// machine, as every kernel set gives the same bits.
func TestExecuteSeedsReproduce(t *testing.T) {
	for _, s := range everyModel(t) {
		t.Run(s.name, func(t *testing.T) {
			body := map[string]any{"job_id": "s", "prompt": "Once upon a time", "max_tokens": 6, "temperature": 0.9, "top_k": 40}
			started, first, _, _ := s.ts.execute(t, context.Background(), body).run(t)
			seed := started["seed"].(float64)
			body["seed"] = seed
			started2, again, _, _ := s.ts.execute(t, context.Background(), body).run(t)
			require.Equal(t, seed, started2["seed"])
			require.Equal(t, tokenText(first), tokenText(again))
			require.Equal(t, first, again)
			body["seed"] = 7
			_, seven, _, _ := s.ts.execute(t, context.Background(), body).run(t)
			body["seed"] = 8
			_, eight, _, _ := s.ts.execute(t, context.Background(), body).run(t)
			require.NotEqual(t, seven, eight, "another seed should sample differently")
		})
	}
}

// TestExecuteStopSequence: a stop string cut from the greedy answer ends
// it there, named in the end event, the text before it all that is sent:
// a whole token of it, and one that splits a token.
func TestExecuteStopSequence(t *testing.T) {
	for _, s := range everyModel(t) {
		t.Run(s.name, func(t *testing.T) {
			r := s.set.Manifest.Generation.Results[0]
			c, _ := s.set.Case(r.Case)
			body := map[string]any{"job_id": "stop", "prompt": *c.Prompt, "max_tokens": 16, "temperature": 0}
			_, tokens, _, _ := s.ts.execute(t, context.Background(), body).run(t)
			full := tokenText(tokens)
			var pieces []string
			for _, tk := range tokens {
				pieces = append(pieces, tk["t"].(string))
			}
			stops := stopsWithin(full, pieces)
			require.NotEmpty(t, stops, "no stop string to cut %q at", full)
			for _, stop := range stops {
				body["stop"] = []string{stop.text + "\x00never", stop.text}
				_, tokens, terminal, end := s.ts.execute(t, context.Background(), body).run(t)
				require.Equal(t, "end", terminal)
				require.Equal(t, "stop_sequence", end["stop_reason"], stop.kind)
				require.Equal(t, stop.text, end["stop_sequence_matched"], stop.kind)
				require.Equal(t, full[:strings.Index(full, stop.text)], tokenText(tokens), stop.kind)
			}
		})
	}
}

func TestExecuteDuplicateJobID(t *testing.T) {
	ts := start(t, server.Config{TokenDelay: 50e6})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := ts.execute(t, ctx, map[string]any{"job_id": "dup", "prompt": "a", "max_tokens": 50})
	name, _ := st.next(t)
	require.Equal(t, "started", name)
	e := ts.call(t, "POST", "/execute", map[string]any{"job_id": "dup", "prompt": "a"}, http.StatusConflict)
	require.Equal(t, "job_id", e["error"].(map[string]any)["param"])
	ts.call(t, "POST", "/cancel", map[string]any{"job_id": "dup"}, http.StatusAccepted)
}
