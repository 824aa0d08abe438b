package probe

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/llorch/llorch-check/checkpoints"
	"github.com/llorch/llorch-check/references"
)

type openAIModels struct {
	Object string       `json:"object"`
	Data   []modelEntry `json:"data"`
}

// completion is the part of a /v1/completions answer the probe reads.
type completion struct {
	Choices []legacyChoice `json:"choices"`
}

// runOpenAI checks prompt log-probabilities and their top alternatives
// (echo + logprobs, as lm-evaluation-harness asks), the set's
// log-likelihoods and the greedy text, through /v1/completions.
func runOpenAI(ctx context.Context, p *prober) ([]checkpoints.Result, error) {
	var models openAIModels
	if ok, _ := p.c.probeGET(ctx, "/v1/models", &models); ok && len(models.Data) > 0 {
		if p.opt.Model == "" {
			// vLLM refuses requests without the served model's name.
			p.opt.Model = models.Data[0].ID
		}
		for _, m := range models.Data {
			if m.ID != p.opt.Model {
				continue
			}
			if err := checkServedModel(p.set, p.opt.Endpoint, m); err != nil {
				return nil, err
			}
		}
	}
	return p.collect(ctx, p.openAICase, func(ctx context.Context, _ int, ll references.Loglikelihood) (float64, *checkpoints.Result, error) {
		lps, _, err := p.promptLogProbs(ctx, slices.Concat(ll.ContextTokens, ll.ContinuationTokens), 1)
		if err != nil {
			return 0, nil, err
		}
		return sumFrom(lps, len(ll.ContextTokens)), nil, nil
	})
}

func (p *prober) openAICase(ctx context.Context, rc *refCase) ([]checkpoints.Result, error) {
	var out []checkpoints.Result
	var dists []topDist
	if len(rc.Rows) > 0 {
		lps, tops, err := p.promptLogProbs(ctx, rc.Tokens, p.opt.TopK)
		if err != nil {
			return nil, err
		}
		out = append(out, promptLogprobsResult(rc, lps))
		dists = promptTops(rc, tops)
	}
	if rc.Gen != nil {
		var c completion
		if err := p.complete(ctx, map[string]any{"prompt": rc.Tokens, "max_tokens": rc.GenN, "temperature": 0, "logprobs": p.opt.TopK}, &c); err != nil {
			return nil, err
		}
		if len(c.Choices) != 1 {
			return nil, fmt.Errorf("%w: %d choices in the answer, want 1", ErrServer, len(c.Choices))
		}
		var steps [][]alt
		if lp := c.Choices[0].Logprobs; lp != nil {
			steps = textAlts(lp.TopLogprobs)
		}
		if rc.Gen.Text != nil {
			out = append(out, greedyTextResult(rc, "generation", c.Choices[0].Text, steps))
		}
		if len(steps) > 0 {
			if d, ok := nextTop(rc, steps[0]); ok {
				dists = append(dists, d)
			}
		}
	}
	if len(dists) > 0 {
		out = append(out, topResult(rc.ID, p.opt.TopK, dists))
	}
	return out, nil
}

// textAlts turns OpenAI's top_logprobs (keyed by token text) into
// alternatives without ids.
func textAlts(tops []map[string]float64) [][]alt {
	out := make([][]alt, len(tops))
	for i, m := range tops {
		for _, lp := range m {
			out[i] = append(out[i], alt{ID: byText, LogProb: lp})
		}
	}
	return out
}

// promptLogProbs asks for the prompt echoed with log-probabilities and
// top alternatives, and returns both by prompt position; position 0, which
// has no context, is NaN with no alternatives.
func (p *prober) promptLogProbs(ctx context.Context, tokens []int, top int) ([]float64, [][]alt, error) {
	var c completion
	// max_tokens 1, as lm-evaluation-harness asks: vLLM refuses 0.
	if err := p.complete(ctx, map[string]any{"prompt": tokens, "max_tokens": 1, "echo": true, "logprobs": top, "temperature": 0}, &c); err != nil {
		return nil, nil, err
	}
	if len(c.Choices) != 1 || c.Choices[0].Logprobs == nil {
		return nil, nil, fmt.Errorf("%w: no choice with logprobs in the answer", ErrServer)
	}
	lp := c.Choices[0].Logprobs
	if n := len(lp.TokenLogprobs); n < len(tokens) || n > len(tokens)+1 {
		return nil, nil, fmt.Errorf("%w: %d token log-probabilities for a prompt of %d tokens and 1 generated", ErrServer, n, len(tokens))
	}
	out := make([]float64, len(tokens))
	for i := range tokens {
		if lp.TokenLogprobs[i] == nil {
			out[i] = math.NaN()
			if i > 0 {
				return nil, nil, fmt.Errorf("%w: no log-probability for prompt token %d", ErrServer, i)
			}
			continue
		}
		out[i] = *lp.TokenLogprobs[i]
	}
	tops := textAlts(lp.TopLogprobs)
	for len(tops) < len(tokens) {
		tops = append(tops, nil)
	}
	return out, tops[:len(tokens)], nil
}

func (p *prober) complete(ctx context.Context, body map[string]any, out *completion) error {
	if p.opt.Model != "" {
		body["model"] = p.opt.Model
	}
	return p.c.call(ctx, "/v1/completions", body, out)
}
