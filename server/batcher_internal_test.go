package server

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/kvcache"
	"github.com/llorch/llorch-check/loader"
	"github.com/llorch/llorch-check/model"
)

// TestBatcherNeverWaitsOnALaggard: a member that does not submit (a slow
// client, a sequence between steps) delays the others by at most the join
// window, and a step cancelled while it waits returns at once.
func TestBatcherNeverWaitsOnALaggard(t *testing.T) {
	m, err := loader.Load(fixture.TinyModel())
	require.NoError(t, err)
	sizes := make(chan int, 10)
	b := newBatcher(m, 0, func(n int) { sizes <- n })
	b.Join() // the laggard: a member that never submits
	b.Join()
	c := m.NewCache()
	_, err = m.Forward(context.Background(), c, []int{15496}, model.ForwardOptions{})
	require.NoError(t, err)

	t0 := time.Now()
	logits, err := b.Step(context.Background(), c, 11)
	require.NoError(t, err)
	require.Len(t, logits, m.Config.VocabSize)
	require.Less(t, time.Since(t0), time.Second, "waited on a member that never submits")
	require.Equal(t, 1, <-sizes)

	// Cancelled while waiting for the laggard: out before the window
	// (maxJoinWait, as lastStep is long) ends.
	b.mu.Lock()
	b.lastStep = time.Hour
	b.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	n := c.Len()
	_, err = b.Step(ctx, c, 11)
	require.ErrorIs(t, err, context.Canceled)
	b.mu.Lock()
	require.Empty(t, b.pending, "a cancelled step leaves the queue")
	b.mu.Unlock()
	require.Equal(t, n, c.Len(), "a cancelled step does not touch the cache")

	// When the laggard leaves, nobody waits for it any more.
	b.Leave()
	t0 = time.Now()
	_, err = b.Step(context.Background(), c, 11)
	require.NoError(t, err)
	require.Less(t, time.Since(t0), time.Second)
	b.Leave()
}

// TestBatcherChunkedPrefill: a prompt prefilled in chunks through the
// batches, beside another sequence's decode steps, gives the logits of a
// prefill alone, and the other sequence's steps those of decoding alone.
func TestBatcherChunkedPrefill(t *testing.T) {
	m, err := loader.Load(fixture.TinyModel())
	require.NoError(t, err)
	ctx := context.Background()
	prompt := []int{15496, 11, 616, 1438, 318, 257, 1332, 13, 632, 373, 257}
	alone := m.NewCache()
	want, err := m.Forward(ctx, alone, prompt, model.ForwardOptions{})
	require.NoError(t, err)
	decoded := m.NewCache()
	_, err = m.Forward(ctx, decoded, prompt[:3], model.ForwardOptions{})
	require.NoError(t, err)
	var wantSteps [][]float32
	for _, tok := range prompt[3:9] {
		l, err := m.DecodeBatch(ctx, []*kvcache.Cache{decoded}, []int{tok})
		require.NoError(t, err)
		wantSteps = append(wantSteps, append([]float32(nil), l[0]...))
	}

	for _, chunk := range []int{1, 4, 64} {
		b := newBatcher(m, chunk, func(int) {})
		a, p := m.NewCache(), m.NewCache()
		_, err = m.Forward(ctx, a, prompt[:3], model.ForwardOptions{})
		require.NoError(t, err)
		b.Join()
		b.Join()
		got := make(chan []float32, 1)
		go func() {
			l, err := b.Prefill(ctx, p, prompt)
			if err != nil {
				l = nil
			}
			got <- append([]float32(nil), l...)
			b.Leave()
		}()
		for i, tok := range prompt[3:9] {
			l, err := b.Step(ctx, a, tok)
			require.NoError(t, err)
			require.Equal(t, wantSteps[i], l, "chunk %d: step %d beside the prefill", chunk, i)
		}
		b.Leave()
		require.Equal(t, want, <-got, "chunk %d: the prompt's last logits", chunk)
		require.Equal(t, len(prompt), p.Len())
	}
}
