package model

import (
	"context"
	"errors"
	"fmt"

	"github.com/llorch/llorch-check/kvcache"
)

// DecodeBatch advances len(caches) independent sequences by one token each
// (tokens[i] is appended to caches[i]) and returns each sequence's logits
// for its new position, logits[i] of length VocabSize. logits[i] is a
// buffer caches[i] owns and reuses: it holds these values until the next
// DecodeBatch or StepBatch with that cache.
//
// The sequences may have different lengths. All their rows go through each
// weight matrix together, so a step for B sequences streams the weights
// once instead of B times: on a bandwidth-bound machine B sequences cost
// little more than one. This is the call a server's scheduler should make
// once per step with every running sequence (see scripts/bench/NOTES.md for
// the measured scaling). Results are bit-identical to B separate Forward
// calls: the kernels compute every row on its own.
//
// On any error no cache is changed. The caches must be distinct, and none
// may be used concurrently by another call.
func (m *Model) DecodeBatch(ctx context.Context, caches []*kvcache.Cache, tokens []int) ([][]float32, error) {
	if len(caches) != len(tokens) {
		return nil, fmt.Errorf("decode batch: %d caches but %d tokens", len(caches), len(tokens))
	}
	steps := make([][]int, len(tokens))
	for i := range tokens {
		steps[i] = tokens[i : i+1]
	}
	return m.StepBatch(ctx, caches, steps)
}

// WarmUp is one short decode, as a request makes it: a two-token prefill
// of the EOS token and one step, through the batched path a server's
// scheduler uses (DecodeBatch), on a cache it then drops. The first
// requests then do not pay for faulting the weights in and growing the
// scratch pools; nothing a later call computes changes.
func (m *Model) WarmUp(ctx context.Context) error {
	c := m.NewCache()
	eos := m.Config.EOSTokenID
	if _, err := m.Forward(ctx, c, []int{eos, eos}, ForwardOptions{}); err != nil {
		return err
	}
	_, err := m.DecodeBatch(ctx, []*kvcache.Cache{c}, []int{eos})
	return err
}

// StepBatch is DecodeBatch with any number of tokens a sequence: a
// server's step that carries a chunk of a prompt's prefill beside the
// decode steps of the running sequences, so the chunk's rows and theirs
// share one pass over the weights (chunked prefill). logits[i] is the
// last position's, in caches[i]'s buffer.
func (m *Model) StepBatch(ctx context.Context, caches []*kvcache.Cache, tokens [][]int) ([][]float32, error) {
	if len(caches) != len(tokens) {
		return nil, fmt.Errorf("step batch: %d caches but %d token lists", len(caches), len(tokens))
	}
	if len(caches) == 0 {
		return nil, errors.New("step batch: no sequences")
	}
	seen := make(map[*kvcache.Cache]bool, len(caches))
	spans := make([]span, len(caches))
	var flat []int
	for i, c := range caches {
		if err := m.checkInput(c, tokens[i]); err != nil {
			return nil, fmt.Errorf("step batch: sequence %d: %w", i, err)
		}
		if seen[c] {
			return nil, fmt.Errorf("step batch: sequence %d: the same cache appears twice", i)
		}
		seen[c] = true
		spans[i] = span{c: c, off: c.Len(), T: len(tokens[i])}
		flat = append(flat, tokens[i]...)
	}
	V := m.Config.VocabSize
	out := make([][]float32, len(caches))
	if len(caches) == 1 {
		out[0] = caches[0].LogitsBuffer(V)
		if _, err := m.forward(ctx, spans, flat, hooks{}, false, out[0]); err != nil {
			return nil, err
		}
		return out, nil
	}
	// One LM head pass for every sequence's last row, then each row to
	// its cache's buffer: a copy from a warm buffer costs far less than
	// fresh memory.
	buf := batchLogits.Get(len(caches) * V)
	defer batchLogits.Put(buf)
	if _, err := m.forward(ctx, spans, flat, hooks{}, false, *buf); err != nil {
		return nil, err
	}
	for i, c := range caches {
		out[i] = c.LogitsBuffer(V)
		copy(out[i], (*buf)[i*V:(i+1)*V])
	}
	return out, nil
}
