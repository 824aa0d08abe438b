package model

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/kvcache"
)

// TestDecodeBatchMatchesForward decodes sequences of different lengths
// together and one at a time: the logits and caches must agree.
func TestDecodeBatchMatchesForward(t *testing.T) {
	m, _ := testModel(t)
	ctx := context.Background()
	lens := []int{1, 5, 3, 9}
	B := len(lens)
	batch, single := make([]*kvcache.Cache, B), make([]*kvcache.Cache, B)
	for b, n := range lens {
		batch[b], single[b] = m.NewCache(), m.NewCache()
		toks := testTokens(n, uint64(10+b))
		_, err := m.Forward(ctx, batch[b], toks, ForwardOptions{})
		require.NoError(t, err)
		_, err = m.Forward(ctx, single[b], toks, ForwardOptions{})
		require.NoError(t, err)
	}
	for step := range 4 {
		next := testTokens(B, uint64(100+step))
		got, err := m.DecodeBatch(ctx, batch, next)
		require.NoError(t, err)
		require.Len(t, got, B)
		for b := range B {
			want, err := m.Forward(ctx, single[b], next[b:b+1], ForwardOptions{})
			require.NoError(t, err)
			requireClose(t, f64(want), got[b], 1e-5, "step %d sequence %d", step, b)
			require.Equal(t, single[b].Len(), batch[b].Len())
		}
	}
	for b := range B {
		for l := 0; l < testCfg.NLayer; l++ {
			k1, v1 := batch[b].Snapshot(l)
			k2, v2 := single[b].Snapshot(l)
			requireClose(t, f64(k2), k1, 1e-5, "keys of sequence %d layer %d", b, l)
			requireClose(t, f64(v2), v1, 1e-5, "values of sequence %d layer %d", b, l)
		}
	}
}

func TestDecodeBatchErrors(t *testing.T) {
	m, _ := testModel(t)
	ctx := context.Background()
	a, full := m.NewCache(), m.NewCache()
	_, err := m.Forward(ctx, full, make([]int, testCfg.NPositions), ForwardOptions{})
	require.NoError(t, err)
	_, err = m.DecodeBatch(ctx, nil, nil)
	require.Error(t, err)
	_, err = m.DecodeBatch(ctx, []*kvcache.Cache{a}, []int{1, 2})
	require.Error(t, err)
	_, err = m.DecodeBatch(ctx, []*kvcache.Cache{a, a}, []int{1, 2})
	require.ErrorContains(t, err, "twice")
	_, err = m.DecodeBatch(ctx, []*kvcache.Cache{a, full}, []int{1, 2})
	require.ErrorContains(t, err, "sequence 1")
	require.Equal(t, 0, a.Len(), "a failed batch must leave every cache unchanged")
	_, err = m.DecodeBatch(ctx, []*kvcache.Cache{a}, []int{testCfg.VocabSize})
	require.Error(t, err)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = m.DecodeBatch(cctx, []*kvcache.Cache{a}, []int{1})
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, 0, a.Len())
}

// TestDecodeBatchSameBits: a sequence decoded in a batch (the tile kernel
// and its edges, from 4 rows) gets exactly the bits it gets alone (the
// panel kernel), so a server's batching never changes a sampled token.
func TestDecodeBatchSameBits(t *testing.T) {
	m, _ := testModel(t)
	ctx := context.Background()
	const B = 5
	batch := make([]*kvcache.Cache, B)
	prompts := make([][]int, B)
	for b := range batch {
		batch[b] = m.NewCache()
		prompts[b] = testTokens(2+b, uint64(20+b))
		_, err := m.Forward(ctx, batch[b], prompts[b], ForwardOptions{})
		require.NoError(t, err)
	}
	next := testTokens(B, 99)
	got, err := m.DecodeBatch(ctx, batch, next)
	require.NoError(t, err)
	for b := range B {
		c := m.NewCache()
		_, err := m.Forward(ctx, c, prompts[b], ForwardOptions{})
		require.NoError(t, err)
		want, err := m.Forward(ctx, c, next[b:b+1], ForwardOptions{})
		require.NoError(t, err)
		require.Equal(t, want, got[b], "sequence %d", b)
	}
}

// TestDecodeBatchReusesLogits: each sequence's logits come back in a
// buffer its cache owns, the same one every step, with that step's values
// (a fresh vocabulary-sized slice a step cost ~10% of a decode step in
// page faults).
func TestDecodeBatchReusesLogits(t *testing.T) {
	m, _ := testModel(t)
	ctx := context.Background()
	for _, B := range []int{1, 3} {
		caches, alone := make([]*kvcache.Cache, B), make([]*kvcache.Cache, B)
		for b := range caches {
			caches[b], alone[b] = m.NewCache(), m.NewCache()
		}
		var first [][]float32
		for step := range 3 {
			next := testTokens(B, uint64(200+step))
			got, err := m.DecodeBatch(ctx, caches, next)
			require.NoError(t, err)
			if step == 0 {
				first = got
			}
			for b := range B {
				require.Same(t, &first[b][0], &got[b][0], "B=%d step %d sequence %d: a new buffer", B, step, b)
				want, err := m.Forward(ctx, alone[b], next[b:b+1], ForwardOptions{})
				require.NoError(t, err)
				require.Equal(t, want, got[b], "B=%d step %d sequence %d", B, step, b)
			}
		}
	}
}

// TestWarmUp: the warm-up decode succeeds, stops with its context, and
// leaves every later answer as it was.
func TestWarmUp(t *testing.T) {
	m, _ := testModel(t)
	toks := testTokens(5, 7)
	cold, err := m.Forward(context.Background(), m.NewCache(), toks, ForwardOptions{})
	require.NoError(t, err)
	cold = append([]float32(nil), cold...)
	require.NoError(t, m.WarmUp(context.Background()))
	warm, err := m.Forward(context.Background(), m.NewCache(), toks, ForwardOptions{})
	require.NoError(t, err)
	require.Equal(t, cold, warm)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, m.WarmUp(ctx), context.Canceled)
}
