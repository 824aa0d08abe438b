package probe

import (
	"context"
	"fmt"

	"github.com/llorch/llorch-check/checkpoints"
	"github.com/llorch/llorch-check/references"
)

// runLlorch checks the set's log-likelihoods and whether each pair's
// continuation is greedy through /loglikelihood, and the greedy text
// through /generate: llorch-check serve's batch API (docs/api.md), which takes
// and returns text.
func runLlorch(ctx context.Context, p *prober) ([]checkpoints.Result, error) {
	var greedy []checkpoints.Result
	out, err := p.collect(ctx, p.llorchCase, func(ctx context.Context, i int, ll references.Loglikelihood) (float64, *checkpoints.Result, error) {
		var ans struct {
			LL       []float64 `json:"ll"`
			IsGreedy []bool    `json:"is_greedy"`
		}
		body := map[string]any{"prompts": []string{ll.Context}, "continuations": []string{ll.Continuation}}
		if err := p.c.call(ctx, "/loglikelihood", body, &ans); err != nil {
			return 0, nil, err
		}
		if len(ans.LL) != 1 || len(ans.IsGreedy) != 1 {
			return 0, nil, fmt.Errorf("%w: /loglikelihood answered %d ll and %d is_greedy for 1 pair", ErrServer, len(ans.LL), len(ans.IsGreedy))
		}
		greedy = append(greedy, checkpoints.CompareIDs(10, "is_greedy", fmt.Sprintf("loglikelihood[%d]", i), []int{b2i(ans.IsGreedy[0])}, []int{b2i(ll.IsGreedy)}))
		return ans.LL[0], nil, nil
	})
	return append(out, greedy...), err
}

func (p *prober) llorchCase(ctx context.Context, rc *refCase) ([]checkpoints.Result, error) {
	if rc.Gen == nil || rc.Gen.Text == nil {
		return nil, nil
	}
	prompt, err := rc.prompt("llorch")
	if err != nil {
		return nil, err
	}
	var ans struct {
		Completions []string `json:"completions"`
		Usage       struct {
			PromptTokens *int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	if err := p.c.call(ctx, "/generate", map[string]any{"prompts": []string{prompt}, "max_tokens": rc.GenN, "temperature": 0}, &ans); err != nil {
		return nil, err
	}
	if len(ans.Completions) != 1 || ans.Usage.PromptTokens == nil {
		return nil, fmt.Errorf("%w: /generate answered %d completions and %s prompt tokens for 1 prompt", ErrServer, len(ans.Completions), intOrNone(ans.Usage.PromptTokens))
	}
	rs := []checkpoints.Result{greedyTextResult(rc, "generation", ans.Completions[0], nil)}
	if n := *ans.Usage.PromptTokens; n != len(rc.Tokens) {
		rs = tokenCountFailure(rc, n, rs)
	}
	return rs, nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
