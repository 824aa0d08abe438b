package generation_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/generation"
	"github.com/llorch/llorch-check/sampling"
)

// rule is one broken rule as a route sees it: the field and the code.
type rule struct{ field, code string }

func rulesOf(err error) []rule {
	var out []rule
	for _, e := range generation.AsFieldErrors(err) {
		out = append(out, rule{e.Field, e.Code})
	}
	return out
}

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
		want []rule
		msg  string // substring of the error
	}{
		{"valid", ok, nil, ""},
		{"exactly the context", with(func(r *generation.Request) { r.MaxTokens = 13 }), nil, ""},
		{"empty prompt", with(func(r *generation.Request) { r.Prompt = nil }), []rule{{"prompt", "length"}}, "prompt: empty"},
		{"token outside the vocabulary", with(func(r *generation.Request) { r.Prompt = []int{1, 100} }),
			[]rule{{"prompt", "vocabulary"}}, "token 100 at index 1"},
		{"negative token", with(func(r *generation.Request) { r.Prompt = []int{-1} }), []rule{{"prompt", "vocabulary"}}, "token -1 at index 0"},
		{"max_tokens 0", with(func(r *generation.Request) { r.MaxTokens = 0 }), []rule{{"max_tokens", "range"}}, "max_tokens 0"},
		{"max_tokens 0 allowed", with(func(r *generation.Request) { r.MaxTokens, r.AllowEmpty = 0, true }), nil, ""},
		{"beyond the context", with(func(r *generation.Request) { r.MaxTokens = 14 }), []rule{{"max_tokens", "context_length"}},
			"max_tokens 14: prompt of 3 tokens + 14 new tokens = 17 exceeds the context length 16"},
		{"a default shrinks", with(func(r *generation.Request) { r.MaxTokens, r.DefaultMaxTokens = 100, true }), nil, ""},
		{"a default with no room", with(func(r *generation.Request) { r.Prompt, r.DefaultMaxTokens = make([]int, 16), true }),
			[]rule{{"max_tokens", "context_length"}}, "prompt of 16 tokens leaves no room to generate in the context length 16"},
		{"a default may leave nothing when allowed", with(func(r *generation.Request) {
			r.Prompt, r.DefaultMaxTokens, r.AllowEmpty = make([]int, 16), true, true
		}), nil, ""},
		{"a prompt beyond the context, allowed empty", with(func(r *generation.Request) {
			r.Prompt, r.MaxTokens, r.AllowEmpty = make([]int, 17), 0, true
		}), []rule{{"max_tokens", "context_length"}}, "17 tokens exceed the context length 16"},
		{"negative temperature", with(func(r *generation.Request) { r.Params.Temperature = -1 }), []rule{{"temperature", "range"}}, "temperature -1"},
		{"top_p", with(func(r *generation.Request) { r.Params.TopP = 1.5 }), []rule{{"top_p", "range"}}, "top_p 1.5"},
		{"top_k beyond the vocabulary", with(func(r *generation.Request) { r.Params.TopK = 51 }), []rule{{"top_k", "range"}}, "top_k 51"},
		{"repetition_penalty", with(func(r *generation.Request) { r.Params.RepetitionPenalty = 0 }),
			[]rule{{"repetition_penalty", "range"}}, "repetition_penalty 0"},
		{"logit_bias", with(func(r *generation.Request) { r.Params.LogitBias = map[int]float64{60: 1} }),
			[]rule{{"logit_bias", "range"}}, "token 60 is outside"},
		{"top_logprobs", with(func(r *generation.Request) { r.TopLogProbs = -1 }), []rule{{"top_logprobs", "range"}}, "top_logprobs -1"},
		{"four stop strings", with(func(r *generation.Request) { r.Stop = []string{"a", "b", "c", "d"} }), nil, ""},
		{"five stop strings", with(func(r *generation.Request) { r.Stop = []string{"a", "b", "c", "d", "e"} }),
			[]rule{{"stop", "length"}}, "stop: 5 strings, at most 4"},
		{"empty stop string", with(func(r *generation.Request) { r.Stop = []string{"a", ""} }), []rule{{"stop[1]", "length"}}, "stop[1]: must be 1..100 bytes"},
		{"long stop string", with(func(r *generation.Request) { r.Stop = []string{string(make([]byte, 101))} }), []rule{{"stop[0]", "length"}}, ""},
		{"invalid UTF-8 stop", with(func(r *generation.Request) { r.Stop = []string{"\xff"} }), []rule{{"stop[0]", "utf8"}}, "stop[0]"},
		{"every field at once", with(func(r *generation.Request) {
			r.Prompt, r.MaxTokens, r.Params.TopP, r.Stop = nil, 0, 2, []string{"", "\xff"}
		}), []rule{{"prompt", "length"}, {"max_tokens", "range"}, {"top_p", "range"}, {"stop[0]", "length"}, {"stop[1]", "utf8"}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.req.Validate(16, 50)
			require.Equal(t, tt.want, rulesOf(err))
			if tt.msg != "" {
				require.ErrorContains(t, err, tt.msg)
			}
		})
	}
}

func TestValidatePromptAndPair(t *testing.T) {
	require.NoError(t, generation.ValidatePrompt([]int{1, 2}, 2, 50))
	require.Equal(t, []rule{{"prompt", "context_length"}}, rulesOf(generation.ValidatePrompt([]int{1, 2, 3}, 2, 50)))
	require.Equal(t, []rule{{"prompt", "length"}}, rulesOf(generation.ValidatePrompt(nil, 2, 50)))
	require.Equal(t, []rule{{"prompt", "vocabulary"}}, rulesOf(generation.ValidatePrompt([]int{50}, 2, 50)))

	require.NoError(t, generation.ValidatePair([]int{1, 2, 3}, []int{4, 5}, 2, 50), "the context may be cut, the continuation not")
	require.Equal(t, []rule{{"continuation", "context_length"}}, rulesOf(generation.ValidatePair([]int{1}, []int{4, 5, 6}, 2, 50)))
	require.Equal(t, []rule{{"context", "length"}, {"continuation", "length"}}, rulesOf(generation.ValidatePair(nil, nil, 2, 50)))
}

// TestGenerateRejectsBeforeRunning: a request that cannot fit the context is
// the caller's error before any forward pass, not a failure midway.
func TestGenerateRejectsBeforeRunning(t *testing.T) {
	d := &script{next: []int{1, 2, 3, 4, 5}, ctxLen: 8}
	_, err := generation.Generate(context.Background(), d, nil,
		generation.Request{Prompt: []int{1, 2, 3, 4, 5}, MaxTokens: 4, Params: greedy}, nil)
	require.ErrorContains(t, err, "prompt of 5 tokens + 4 new tokens = 9 exceeds the context length 8")
	require.Equal(t, []rule{{"max_tokens", "context_length"}}, rulesOf(err))
	require.Zero(t, d.prefills)
	_, err = generation.Generate(context.Background(), d, nil,
		generation.Request{Prompt: []int{1, 2, 3, 4, 5}, MaxTokens: 3, Params: greedy}, nil)
	require.NoError(t, err)
}

// TestGenerateFitsADefault: a default MaxTokens generates what the context
// leaves, and with AllowEmpty none at all, without a forward pass.
func TestGenerateFitsADefault(t *testing.T) {
	d := &script{next: []int{1, 2, 3, 4, 5}, ctxLen: 8}
	res, err := generation.Generate(context.Background(), d, nil,
		generation.Request{Prompt: []int{1, 2, 3, 4, 5}, MaxTokens: 100, DefaultMaxTokens: true, Params: greedy}, nil)
	require.NoError(t, err)
	require.Len(t, res.Tokens, 3)
	res, err = generation.Generate(context.Background(), d, nil,
		generation.Request{Prompt: make([]int, 8), MaxTokens: 100, DefaultMaxTokens: true, AllowEmpty: true, Params: greedy}, nil)
	require.NoError(t, err)
	require.Empty(t, res.Tokens)
	require.Equal(t, generation.StopMaxTokens, res.StopReason)
	require.Equal(t, 1, d.prefills, "nothing to generate, nothing run")
}

// TestTokenRule: the one vocabulary rule, as the routes that name each id
// of a list report it.
func TestTokenRule(t *testing.T) {
	for _, c := range []struct {
		id  int
		bad bool
	}{{0, false}, {15, false}, {16, true}, {-1, true}} {
		e := generation.TokenRule("tokens[3]", c.id, 16)
		if !c.bad {
			require.Nil(t, e, "id %d", c.id)
			continue
		}
		require.NotNil(t, e, "id %d", c.id)
		require.Equal(t, generation.FieldError{Field: "tokens[3]", Code: generation.CodeVocabulary,
			Message: "token id must be 0..15", Value: c.id}, *e)
	}
}
