package model

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/kvcache"
)

// snapshots is every layer's keys and values of c.
func snapshots(c *kvcache.Cache, nLayer int) (k, v [][]float32) {
	for l := range nLayer {
		kl, vl := c.Snapshot(l)
		k, v = append(k, kl), append(v, vl)
	}
	return k, v
}

func forcedFrom(k, v [][]float32, n int) *ForcedKV {
	return &ForcedKV{Positions: n, Layer: func(l int) ([]float32, []float32) { return k[l], v[l] }}
}

// ForceKV stores the given keys and values in place of the pass's own and
// attention reads them: fed a cache's own contents it changes no bit, fed
// other values the cache holds those (rounded as it stores) and the
// logits move. Prefill and step alike.
func TestForceKV(t *testing.T) {
	ctx := context.Background()
	m, _ := testModel(t)
	tokens := testTokens(9, 3)
	T, L := len(tokens), m.Config.NLayer
	for _, f16 := range []bool{false, true} {
		p := newPool(t, m, kvcache.Options{Float16: f16, BlockTokens: 4})
		own := p.NewCache()
		want, err := m.Forward(ctx, own, tokens, ForwardOptions{AllLogits: true})
		require.NoError(t, err)
		k, v := snapshots(own, L)

		same := p.NewCache()
		got, err := m.Forward(ctx, same, tokens[:5], ForwardOptions{AllLogits: true, ForceKV: forcedFrom(k, v, T)})
		require.NoError(t, err)
		step, err := m.Forward(ctx, same, tokens[5:], ForwardOptions{AllLogits: true, ForceKV: forcedFrom(k, v, T)})
		require.NoError(t, err)
		require.Equal(t, want, append(got, step...), "f16 %v: the cache's own values change nothing", f16)
		none := &ForcedKV{Positions: T, Layer: func(int) ([]float32, []float32) { return nil, nil }}
		kept, err := m.Forward(ctx, p.NewCache(), tokens, ForwardOptions{AllLogits: true, ForceKV: none})
		require.NoError(t, err)
		require.Equal(t, want, kept, "f16 %v: nils keep the pass's own", f16)

		// One key of layer 0 moved, in the step's positions and before.
		k2 := slices.Clone(k)
		k2[0] = slices.Clone(k[0])
		k2[0][3] += 0.3
		k2[0][7*m.Config.HeadDim()+1] -= 0.3
		forced := p.NewCache()
		moved, err := m.Forward(ctx, forced, tokens, ForwardOptions{AllLogits: true, ForceKV: forcedFrom(k2, v, T)})
		require.NoError(t, err)
		require.NotEqual(t, want, moved, "f16 %v: attention read the forced keys", f16)
		fk, fv := snapshots(forced, L)
		wantK0 := slices.Clone(k2[0])
		if f16 {
			for i, x := range wantK0 {
				wantK0[i] = gguf.Float16To32(gguf.Float32To16(x))
			}
		}
		require.Equal(t, wantK0, fk[0], "f16 %v: the cache holds the forced keys as it stores them", f16)
		require.Equal(t, k[1:], fk[1:], "f16 %v", f16)
		require.Equal(t, v, fv, "f16 %v", f16)
	}

	_, err := m.Forward(ctx, m.NewCache(), tokens, ForwardOptions{ForceKV: &ForcedKV{Positions: T - 1}})
	require.ErrorContains(t, err, "forced KV cache of 8 positions: the pass reaches position 8")
	short := &ForcedKV{Positions: T, Layer: func(int) ([]float32, []float32) { return make([]float32, 3), make([]float32, 3) }}
	_, err = m.Forward(ctx, m.NewCache(), tokens, ForwardOptions{ForceKV: short})
	require.ErrorContains(t, err, "forced KV cache, layer 0: 3 keys and 3 values, want")
}
