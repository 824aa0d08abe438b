package generation_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/generation"
	"github.com/llorch/llorch-check/internal/fixture/tiny"
	"github.com/llorch/llorch-check/kvcache"
	"github.com/llorch/llorch-check/model"
)

// countingBatcher runs each step alone and counts what the decoder told it.
type countingBatcher struct {
	m                   *model.Model
	joins, leaves, runs int
	fail                error
}

func (b *countingBatcher) Join()  { b.joins++ }
func (b *countingBatcher) Leave() { b.leaves++ }
func (b *countingBatcher) Step(ctx context.Context, c *kvcache.Cache, token int) ([]float32, error) {
	b.runs++
	if b.fail != nil {
		return nil, b.fail
	}
	return b.m.Forward(ctx, c, []int{token}, model.ForwardOptions{})
}

// TestBatchedDecoderMembership: a generation joins its batcher for its
// steps and leaves it when Generate returns, or at once when a step fails,
// so no batch waits on a sequence that has stopped; its tokens are those
// of the unbatched decoder.
func TestBatchedDecoderMembership(t *testing.T) {
	m, _, _ := tiny.Load(t)
	req := generation.Request{Prompt: []int{15496, 13}, MaxTokens: 4, Params: greedy}
	alone, err := generation.Generate(context.Background(), generation.NewModelDecoder(m), nil, req, nil)
	require.NoError(t, err)

	b := &countingBatcher{m: m}
	d := generation.NewBatchedDecoder(m, nil, b)
	res, err := generation.Generate(context.Background(), d, nil, req, nil)
	require.NoError(t, err)
	require.Equal(t, alone.Tokens, res.Tokens)
	require.Equal(t, [3]int{1, 1, 3}, [3]int{b.joins, b.leaves, b.runs}, "joins, leaves, steps")

	_, err = generation.PromptLogProbs(context.Background(), d, req.Prompt, 0)
	require.NoError(t, err)
	require.Equal(t, 1, b.leaves, "scoring runs alone and leaves nothing to end")

	b.fail = errors.New("batch failed")
	_, err = generation.Generate(context.Background(), d, nil, req, nil)
	require.ErrorIs(t, err, b.fail)
	require.Equal(t, [2]int{2, 2}, [2]int{b.joins, b.leaves}, "a failed step leaves once")
}
