package generation_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/generation"
	"github.com/llorch/llorch-check/sampling"
)

func TestRequestValidate(t *testing.T) {
	ok := generation.Request{Prompt: []int{1, 2, 3}, MaxTokens: 5, Params: sampling.DefaultParams()}
	with := func(f func(*generation.Request)) generation.Request {
		r := ok
		f(&r)
		return r
	}
	tests := []struct {
		name string
		req  generation.Request
		want string
	}{
		{"valid", ok, ""},
		{"exactly the context", with(func(r *generation.Request) { r.MaxTokens = 13 }), ""},
		{"empty prompt", with(func(r *generation.Request) { r.Prompt = nil }), "prompt: empty"},
		{"token outside the vocabulary", with(func(r *generation.Request) { r.Prompt = []int{1, 100} }), "token 100 at index 1"},
		{"negative token", with(func(r *generation.Request) { r.Prompt = []int{-1} }), "token -1 at index 0"},
		{"max_tokens 0", with(func(r *generation.Request) { r.MaxTokens = 0 }), "max_tokens 0"},
		{"beyond the context", with(func(r *generation.Request) { r.MaxTokens = 14 }),
			"prompt of 3 tokens + 14 new tokens = 17 exceeds the context length 16"},
		{"negative temperature", with(func(r *generation.Request) { r.Params.Temperature = -1 }), "temperature -1"},
		{"top_p", with(func(r *generation.Request) { r.Params.TopP = 1.5 }), "top_p 1.5"},
		{"top_k beyond the vocabulary", with(func(r *generation.Request) { r.Params.TopK = 51 }), "top_k 51"},
		{"repetition_penalty", with(func(r *generation.Request) { r.Params.RepetitionPenalty = 0 }), "repetition_penalty 0"},
		{"four stop strings", with(func(r *generation.Request) { r.Stop = []string{"a", "b", "c", "d"} }), ""},
		{"five stop strings", with(func(r *generation.Request) { r.Stop = []string{"a", "b", "c", "d", "e"} }), "stop: 5 strings, at most 4"},
		{"empty stop string", with(func(r *generation.Request) { r.Stop = []string{"a", ""} }), "stop[1]: empty"},
		{"invalid UTF-8 stop", with(func(r *generation.Request) { r.Stop = []string{"\xff"} }), "stop[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.req.Validate(16, 50)
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.want)
		})
	}
}

// TestGenerateRejectsBeforeRunning: a request that cannot fit the context is
// the caller's error before any forward pass, not a failure midway.
func TestGenerateRejectsBeforeRunning(t *testing.T) {
	d := &script{next: []int{1, 2, 3, 4, 5}, ctxLen: 8}
	_, err := generation.Generate(context.Background(), d, nil,
		generation.Request{Prompt: []int{1, 2, 3, 4, 5}, MaxTokens: 4, Params: greedy}, nil)
	require.ErrorContains(t, err, "prompt of 5 tokens + 4 new tokens = 9 exceeds the context length 8")
	require.Zero(t, d.prefills)
	_, err = generation.Generate(context.Background(), d, nil,
		generation.Request{Prompt: []int{1, 2, 3, 4, 5}, MaxTokens: 3, Params: greedy}, nil)
	require.NoError(t, err)
}
