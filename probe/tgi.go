package probe

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/llorch/llorch-check/checkpoints"
	"github.com/llorch/llorch-check/references"
)

// tgiToken is TGI's Token and PrefillToken (logprob null for the first
// prompt token).
type tgiToken struct {
	ID      *int     `json:"id"`
	Text    string   `json:"text"`
	LogProb *float64 `json:"logprob"`
}

// tgiAnswer is TGI's non-streaming /generate answer with details.
type tgiAnswer struct {
	GeneratedText string `json:"generated_text"`
	Details       *struct {
		GeneratedTokens *int         `json:"generated_tokens"`
		Prefill         []tgiToken   `json:"prefill"`
		Tokens          []tgiToken   `json:"tokens"`
		TopTokens       [][]tgiToken `json:"top_tokens"`
	} `json:"details"`
}

// tgiEOS is how a TGI prompt conditions on GPT-2's <|endoftext|>: its
// tokenizer parses special tokens in the input text.
const tgiEOS = "<|endoftext|>"

// runTGI checks through TGI's /generate: prompt log-probabilities
// (decoder_input_details), greedy ids and text, and the first generated
// token's top_n_tokens alternatives by id.
func runTGI(ctx context.Context, p *prober) ([]checkpoints.Result, error) {
	return p.collect(ctx, p.tgiCase, func(ctx context.Context, i int, ll references.Loglikelihood) (float64, *checkpoints.Result, error) {
		input := ll.Context + ll.Continuation
		if ll.Context == "" {
			input = tgiEOS + ll.Continuation
		}
		ans, err := p.tgiGenerate(ctx, input, 1, 0)
		if err != nil {
			return 0, nil, err
		}
		want := slices.Concat(ll.ContextTokens, ll.ContinuationTokens)
		ids, lps, err := ans.prefill()
		if err != nil {
			return 0, nil, err
		}
		if !slices.Equal(ids, want) {
			r := checkpoints.Failed(9, "loglikelihood", fmt.Sprintf("loglikelihood[%d]", i), "the server tokenized the pair as %v, the reference as %v", ids, want)
			return 0, &r, nil
		}
		return sumFrom(lps, len(ll.ContextTokens)), nil, nil
	})
}

func (p *prober) tgiCase(ctx context.Context, rc *refCase) ([]checkpoints.Result, error) {
	prompt, err := rc.prompt("tgi")
	if err != nil {
		return nil, err
	}
	ans, err := p.tgiGenerate(ctx, prompt, max(rc.GenN, 1), p.opt.TopK)
	if err != nil {
		return nil, err
	}
	pids, lps, err := ans.prefill()
	if err != nil {
		return nil, err
	}
	var out []checkpoints.Result
	sameTokens := slices.Equal(pids, rc.Tokens)
	if sameTokens && len(rc.Rows) > 0 {
		out = append(out, promptLogprobsResult(rc, lps))
	}
	var ids []int
	for _, t := range ans.Details.Tokens {
		if t.ID == nil {
			return nil, fmt.Errorf("%w: a generated token without id", ErrServer)
		}
		ids = append(ids, *t.ID)
	}
	steps := make([][]alt, len(ans.Details.TopTokens))
	for s, tops := range ans.Details.TopTokens {
		for _, t := range tops {
			if t.ID == nil || t.LogProb == nil || *t.ID < 0 {
				return nil, fmt.Errorf("%w: top_tokens[%d] lists a token without id or logprob, or with a negative id", ErrServer, s)
			}
			steps[s] = append(steps[s], alt{ID: *t.ID, LogProb: *t.LogProb})
		}
	}
	rs := greedyIDResults(rc, ids, steps)
	if rc.Gen != nil && rc.Gen.Text != nil {
		rs = append(rs, greedyTextResult(rc, "generation_text", ans.GeneratedText, steps))
	}
	if len(steps) > 0 {
		if d, ok := nextTop(rc, steps[0]); ok {
			rs = append(rs, topResult(rc.ID, p.opt.TopK, []topDist{d}))
		}
	}
	if !sameTokens {
		rs = tokenCountFailure(rc, len(pids), rs)
	}
	return append(out, rs...), nil
}

// tgiGenerate asks for n greedy tokens after input with every detail TGI
// gives; top 0 asks for no alternatives.
func (p *prober) tgiGenerate(ctx context.Context, input string, n, top int) (*tgiAnswer, error) {
	params := map[string]any{"max_new_tokens": n, "do_sample": false, "details": true, "decoder_input_details": true}
	if top > 0 {
		params["top_n_tokens"] = top
	}
	var ans tgiAnswer
	if err := p.c.call(ctx, "/generate", map[string]any{"inputs": input, "parameters": params}, &ans); err != nil {
		return nil, err
	}
	d := ans.Details
	switch {
	case d == nil:
		return nil, fmt.Errorf("%w: /generate answered without details (is it TGI's?)", ErrServer)
	case d.GeneratedTokens == nil || *d.GeneratedTokens != len(d.Tokens):
		return nil, fmt.Errorf("%w: /generate says generated_tokens %s but lists %d tokens", ErrServer, intOrNone(d.GeneratedTokens), len(d.Tokens))
	case len(d.Tokens) == 0 || len(d.Tokens) > n:
		return nil, fmt.Errorf("%w: /generate listed %d tokens for max_new_tokens %d", ErrServer, len(d.Tokens), n)
	case top > 0 && len(d.TopTokens) > 0 && len(d.TopTokens) != len(d.Tokens):
		return nil, fmt.Errorf("%w: /generate listed top_tokens for %d steps of %d", ErrServer, len(d.TopTokens), len(d.Tokens))
	}
	return &ans, nil
}

// prefill returns the prompt's token ids and log-probabilities by
// position (NaN at position 0).
func (a *tgiAnswer) prefill() ([]int, []float64, error) {
	pre := a.Details.Prefill
	if len(pre) == 0 {
		return nil, nil, fmt.Errorf("%w: /generate answered without prefill details (decoder_input_details)", ErrServer)
	}
	ids := make([]int, len(pre))
	lps := make([]float64, len(pre))
	for i, t := range pre {
		switch {
		case t.ID == nil:
			return nil, nil, fmt.Errorf("%w: prefill token %d has no id", ErrServer, i)
		case t.LogProb == nil && i > 0:
			return nil, nil, fmt.Errorf("%w: prefill token %d has no logprob", ErrServer, i)
		case t.LogProb == nil:
			lps[i] = math.NaN()
		default:
			lps[i] = *t.LogProb
		}
		ids[i] = *t.ID
	}
	return ids, lps, nil
}
