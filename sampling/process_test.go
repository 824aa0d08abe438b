package sampling_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/sampling"
)

// softmax is a plain float64 softmax for expected values.
func softmax(logits ...float64) []float32 {
	mx := math.Inf(-1)
	for _, v := range logits {
		mx = math.Max(mx, v)
	}
	sum := 0.0
	for _, v := range logits {
		sum += math.Exp(v - mx)
	}
	out := make([]float32, len(logits))
	for i, v := range logits {
		out[i] = float32(math.Exp(v-mx) / sum)
	}
	return out
}

var ninf = math.Inf(-1)

func TestProcess(t *testing.T) {
	base := sampling.DefaultParams()
	with := func(f func(*sampling.Params)) sampling.Params {
		p := base
		f(&p)
		return p
	}
	tests := []struct {
		name    string
		logits  []float32
		history []int
		p       sampling.Params
		want    []float32
	}{
		{"defaults are softmax", []float32{1, 2, 3}, nil, base, softmax(1, 2, 3)},
		{"temperature divides", []float32{1, 2, 3}, nil, with(func(p *sampling.Params) { p.Temperature = 0.5 }), softmax(2, 4, 6)},
		{"top_k keeps ties with the k-th", []float32{3, 1, 2, 2}, nil, with(func(p *sampling.Params) { p.TopK = 2 }),
			softmax(3, ninf, 2, 2)},
		{"top_k 1", []float32{3, 1, 2}, nil, with(func(p *sampling.Params) { p.TopK = 1 }), []float32{1, 0, 0}},
		// probs 0.5, 0.25, 0.25 (logits ln): removing ascending while cum ≤ 0.5:
		// the two 0.25s sum to exactly 0.5, so both go.
		{"top_p removes while cum ≤ 1-p", []float32{float32(math.Log(2)), 0, 0}, nil,
			with(func(p *sampling.Params) { p.TopP = 0.5 }), []float32{1, 0, 0}},
		// Equal logits: the lower id is removed first.
		{"top_p tie order", []float32{0, 0, 0, 0}, nil, with(func(p *sampling.Params) { p.TopP = 0.5 }),
			[]float32{0, 0, 0.5, 0.5}},
		{"top_p keeps the top token", []float32{5, 1}, nil, with(func(p *sampling.Params) { p.TopP = 1e-9 }), []float32{1, 0}},
		// probs ∝ 8:4:1; min_p 0.25 keeps ≥ 2.
		{"min_p", []float32{float32(math.Log(8)), float32(math.Log(4)), 0}, nil,
			with(func(p *sampling.Params) { p.MinP = 0.25 }), softmax(math.Log(8), math.Log(4), ninf)},
		{"repetition penalty divides positive, multiplies negative, once per token",
			[]float32{2, -1, 4}, []int{0, 1, 1, 0, 99, -5}, with(func(p *sampling.Params) { p.RepetitionPenalty = 2 }),
			softmax(1, -2, 4)},
		{"greedy is one-hot, ties to the lowest id", []float32{1, 3, 3}, nil, sampling.Params{}, []float32{0, 1, 0}},
		{"greedy after the repetition penalty", []float32{1, 3, 2}, []int{1}, sampling.Params{RepetitionPenalty: 2},
			[]float32{0, 0, 1}},
		{"logit bias adds, out-of-vocabulary ids ignored", []float32{1, 2, 3}, nil,
			with(func(p *sampling.Params) { p.LogitBias = map[int]float64{0: 5, 2: -100, 7: 50} }), softmax(6, 2, -97)},
		{"greedy after the logit bias", []float32{1, 3, 2}, nil, sampling.Params{LogitBias: map[int]float64{2: 1.5}},
			[]float32{0, 0, 1}},
		// presence 0.5 once per token seen, frequency 0.25 per occurrence:
		// token 0 twice (-1.0), token 1 once (-0.75), token 2 never.
		{"presence and frequency count the history", []float32{2, 2, 2}, []int{0, 1, 0, -1, 9},
			with(func(p *sampling.Params) { p.PresencePenalty = 0.5; p.FrequencyPenalty = 0.25 }), softmax(1, 1.25, 2)},
		{"negative penalties encourage", []float32{0, 0}, []int{1},
			with(func(p *sampling.Params) { p.PresencePenalty = -1 }), softmax(0, 1)},
		// bias, then the repetition penalty (divides the biased logit), then
		// the counts: (4+2)/2 - 0.5 = 2.5.
		{"bias, repetition, counts in order", []float32{4, 2}, []int{0},
			with(func(p *sampling.Params) {
				p.LogitBias = map[int]float64{0: 2}
				p.RepetitionPenalty = 2
				p.PresencePenalty = 0.5
			}), softmax(2.5, 2)},
		// Order: the penalty applies before top-k.
		{"combined order", []float32{4, 3, 0}, []int{0}, with(func(p *sampling.Params) { p.RepetitionPenalty = 4; p.TopK = 2 }),
			softmax(1, 3, ninf)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := sampling.Process(tt.logits, tt.history, tt.p)
			require.InDeltaSlice(t, tt.want, got, 1e-7)
			for i, w := range tt.want {
				require.Equal(t, w == 0, got[i] == 0, "removed tokens are exactly 0 (token %d)", i)
			}
		})
	}
}

func TestArgmax(t *testing.T) {
	nan := float32(math.NaN())
	tests := []struct {
		logits []float32
		want   int
	}{
		{[]float32{1, 5, 5, 2}, 1},
		{[]float32{nan, 1, nan, 2}, 3},
		{[]float32{nan, nan}, -1},
		{nil, -1},
		{[]float32{float32(math.Inf(-1)), float32(math.Inf(-1))}, 0},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, sampling.Argmax(tt.logits), "%v", tt.logits)
	}
}

func TestLogSoftmax(t *testing.T) {
	got := sampling.LogSoftmax([]float32{1000, 1000, float32(math.Inf(-1))})
	require.InDelta(t, -math.Ln2, got[0], 1e-12)
	require.InDelta(t, -math.Ln2, got[1], 1e-12)
	require.True(t, math.IsInf(got[2], -1))
}

// ProcessInto gives Process's probabilities through reused buffers, and
// greedy, temperature and penalty settings allocate nothing a token.
func TestProcessIntoReusesBuffers(t *testing.T) {
	logits := make([]float32, 1000)
	for i := range logits {
		logits[i] = float32((i*7919)%1000) / 100
	}
	history := []int{3, 5, 999}
	dst, s := make([]float32, len(logits)), make([]float64, len(logits))
	for _, p := range []sampling.Params{
		{Temperature: 0, TopP: 1, RepetitionPenalty: 1},
		{Temperature: 0.7, TopP: 1, RepetitionPenalty: 1},
		{Temperature: 1, TopP: 1, RepetitionPenalty: 1.3, PresencePenalty: 0.5},
		{Temperature: 0.9, TopK: 40, TopP: 0.9, RepetitionPenalty: 1},
	} {
		want := sampling.Process(logits, history, p)
		require.Equal(t, want, sampling.ProcessInto(dst, s, logits, history, p), "%+v", p)
		if p.TopK == 0 && p.TopP == 1 {
			allocs := testing.AllocsPerRun(10, func() { sampling.ProcessInto(dst, s, logits, history, p) })
			require.Zero(t, allocs, "%+v", p)
		}
	}
}
