package sampling_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/sampling"
)

func TestValidate(t *testing.T) {
	with := func(f func(*sampling.Params)) sampling.Params {
		p := sampling.DefaultParams()
		f(&p)
		return p
	}
	tests := []struct {
		name string
		p    sampling.Params
		want string // substring of the error; "" = valid
	}{
		{"defaults", sampling.DefaultParams(), ""},
		{"zero value is greedy", sampling.Params{}, ""},
		{"greedy ignores warpers", sampling.Params{Temperature: 0, TopP: 7, TopK: -1, MinP: -3}, ""},
		{"greedy with penalty", sampling.Params{Temperature: 0, RepetitionPenalty: 1.3}, ""},
		{"all on", sampling.Params{Temperature: 2, TopK: 100, TopP: 0.5, MinP: 1, RepetitionPenalty: 2}, ""},
		{"negative temperature", with(func(p *sampling.Params) { p.Temperature = -0.5 }), "temperature -0.5"},
		{"NaN temperature", with(func(p *sampling.Params) { p.Temperature = math.NaN() }), "temperature NaN"},
		{"infinite temperature", with(func(p *sampling.Params) { p.Temperature = math.Inf(1) }), "temperature +Inf"},
		{"top_p above 1", with(func(p *sampling.Params) { p.TopP = 1.5 }), "top_p 1.5: must be in (0, 1]"},
		{"top_p 0", with(func(p *sampling.Params) { p.TopP = 0 }), "top_p 0"},
		{"top_p NaN", with(func(p *sampling.Params) { p.TopP = math.NaN() }), "top_p NaN"},
		{"negative top_k", with(func(p *sampling.Params) { p.TopK = -1 }), "top_k -1"},
		{"top_k beyond vocabulary", with(func(p *sampling.Params) { p.TopK = 1001 }), "top_k 1001: exceeds the vocabulary size 1000"},
		{"top_k = vocabulary", with(func(p *sampling.Params) { p.TopK = 1000 }), ""},
		{"min_p above 1", with(func(p *sampling.Params) { p.MinP = 1.01 }), "min_p 1.01"},
		{"negative min_p", with(func(p *sampling.Params) { p.MinP = -0.1 }), "min_p -0.1"},
		{"repetition_penalty 0", with(func(p *sampling.Params) { p.RepetitionPenalty = 0 }), "repetition_penalty 0"},
		{"negative repetition_penalty", with(func(p *sampling.Params) { p.RepetitionPenalty = -1 }), "repetition_penalty -1"},
		{"greedy negative repetition_penalty", sampling.Params{RepetitionPenalty: -1}, "repetition_penalty -1"},
		{"penalties at the limits", with(func(p *sampling.Params) { p.PresencePenalty, p.FrequencyPenalty = -2, 2 }), ""},
		{"presence beyond 2", with(func(p *sampling.Params) { p.PresencePenalty = 2.5 }), "presence_penalty 2.5"},
		{"frequency NaN", with(func(p *sampling.Params) { p.FrequencyPenalty = math.NaN() }), "frequency_penalty NaN"},
		{"greedy checks penalties", sampling.Params{FrequencyPenalty: -3}, "frequency_penalty -3"},
		{"bias at the limits", with(func(p *sampling.Params) { p.LogitBias = map[int]float64{0: -100, 999: 100} }), ""},
		{"bias beyond 100", with(func(p *sampling.Params) { p.LogitBias = map[int]float64{5: 100.5} }), "token 5: bias 100.5"},
		{"bias on a token outside", with(func(p *sampling.Params) { p.LogitBias = map[int]float64{1000: 1} }), "token 1000 is outside"},
		{"bias on a negative token", sampling.Params{LogitBias: map[int]float64{-1: 1}}, "token -1 is outside"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.Validate(1000)
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.want)
		})
	}
}

func TestGreedy(t *testing.T) {
	for temp, want := range map[float64]bool{0: true, 1e-7: true, 1e-6: false, 0.7: false} {
		require.Equal(t, want, sampling.Params{Temperature: temp}.Greedy(), "temperature %g", temp)
	}
}
