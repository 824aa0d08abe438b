package model

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/kvcache"
)

// A spare's stale contents are never read: blocks on memory full of NaN
// (a forced cache's, stored in every position of an ended sequence) give
// the bits of fresh ones, in float32 and float16, for a prefill and the
// steps after it. (Pool behaviour of spares: kvcache's TestSpareBlocks.)
func TestSpareContentsNeverRead(t *testing.T) {
	for _, tm := range pagedModels(t) {
		for _, f16 := range []bool{false, true} {
			t.Run(tm.name, func(t *testing.T) {
				m := tm.m
				prompt, steps := tokensFor(m, 23, 9), tokensFor(m, 7, 10)
				opt := kvcache.Options{BlockTokens: 8, Float16: f16, SpareLinger: -1}
				want := run(t, m, newPool(t, m, opt).NewCache(), prompt, steps)

				opt.SpareLinger = time.Hour
				p := newPool(t, m, opt)
				stale, n := p.NewCache(), 40
				nan := make([]float32, m.Config.KVHeads()*n*m.Config.HeadDim())
				for i := range nan {
					nan[i] = float32(math.NaN())
				}
				_, err := m.Forward(context.Background(), stale, tokensFor(m, n, 11), ForwardOptions{ForceKV: forcedNaN(nan, n)})
				require.NoError(t, err)
				for l := range m.Config.NLayer {
					k, v := stale.Snapshot(l)
					for i := range k {
						require.True(t, math.IsNaN(float64(k[i])) && math.IsNaN(float64(v[i])), "layer %d: the stale cache holds NaN", l)
					}
				}
				stale.Close()
				require.Equal(t, 5, p.Stats().SpareBlocks)
				require.Equal(t, want, run(t, m, p.NewCache(), prompt, steps))
				require.Equal(t, 1, p.Stats().SpareBlocks, "4 blocks on spares")
			})
		}
	}
}

func forcedNaN(nan []float32, n int) *ForcedKV {
	return &ForcedKV{Positions: n, Layer: func(int) ([]float32, []float32) { return nan, nan }}
}
