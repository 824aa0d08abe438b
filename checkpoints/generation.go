package checkpoints

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/llorch/llorch-check/generation"
	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/references"
	"github.com/llorch/llorch-check/sampling"
)

// checkGeneration decodes the reference's greedy continuation through the
// KV cache and compares ids, text and stop reason exactly (checkpoint 12).
func checkGeneration(ctx context.Context, m *model.Model, set *references.Set, c references.Case, opt Options) (Result, bool, error) {
	gen := set.Manifest.Generation
	if gen == nil {
		return Result{}, false, nil
	}
	i := slices.IndexFunc(gen.Results, func(r references.GenerationResult) bool { return r.Case == c.ID })
	if i < 0 {
		return Result{}, false, nil
	}
	want := gen.Results[i]
	res := exactResult(12, "generation", c.ID, len(want.Tokens))
	got, err := greedyContinuation(ctx, m, c, gen.N, opt)
	if errors.Is(err, generation.ErrNoUsableLogits) {
		return res.fail("%v", err), true, nil
	}
	if err != nil {
		return res, true, err
	}
	res = res.exact(got.Tokens, want.Tokens)
	switch {
	case !res.Passed:
	case got.StopReason != want.StopReason:
		res = res.fail("stop reason %q, the reference has %q", got.StopReason, want.StopReason)
	case want.Text != nil && opt.Tokenizer == nil:
		res = res.fail("the model directory has no tokenizer, so the reference text cannot be checked")
	case want.Text != nil && *got.Text != *want.Text:
		res = res.fail("text %q, the reference has %q", *got.Text, *want.Text)
	}
	return res, true, nil
}

// greedyContinuation decodes up to n greedy tokens through the KV cache,
// stopping early at the context length as the reference script does,
// on the options' KV cache.
func greedyContinuation(ctx context.Context, m *model.Model, c references.Case, n int, opt Options) (references.GenerationResult, error) {
	res := references.GenerationResult{Case: c.ID, Tokens: []int{}, StopReason: references.StopContextLength}
	steps := min(n, m.Config.NPositions-len(c.Tokens))
	if steps < 1 {
		return res, nil
	}
	greedy := sampling.DefaultParams()
	greedy.Temperature = 0
	req := generation.Request{Prompt: c.Tokens, MaxTokens: steps, Params: greedy}
	d, err := opt.decoder(m)
	if err != nil {
		return res, err
	}
	tok := opt.Tokenizer
	got, err := generation.Generate(ctx, d, tok, req, nil)
	if err != nil {
		return res, fmt.Errorf("greedy generation: %w", err)
	}
	res.Tokens, res.StopReason = got.Tokens, got.StopReason
	if got.StopReason == generation.StopMaxTokens && steps < n {
		res.StopReason = references.StopContextLength
	}
	if tok != nil {
		res.Text = &got.Text
	}
	return res, nil
}
