package model

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

func requireClose(t *testing.T, want []float64, got []float32, atol float64, msg string, args ...any) {
	t.Helper()
	require.Len(t, got, len(want), msg)
	for i := range want {
		if d := math.Abs(want[i] - float64(got[i])); !(d <= atol) {
			require.Failf(t, "mismatch", "%s: element %d: got %g, want %g (|diff| %g > %g)",
				fmt.Sprintf(msg, args...), i, got[i], want[i], d, atol)
		}
	}
}

func f64(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

func TestForwardMatchesNaive(t *testing.T) {
	m, w := testModel(t)
	for _, T := range []int{1, 2, 7, testCfg.NPositions} {
		t.Run(fmt.Sprint(T), func(t *testing.T) {
			toks := testTokens(T, uint64(T))
			want, _, _ := naiveForward(testCfg, w, toks)
			c := m.NewCache()
			got, err := m.Forward(context.Background(), c, toks, ForwardOptions{AllLogits: true})
			require.NoError(t, err)
			require.Len(t, got, T*testCfg.VocabSize)
			require.Equal(t, T, c.Len())
			for i := range want {
				requireClose(t, want[i], got[i*testCfg.VocabSize:(i+1)*testCfg.VocabSize], 1e-4, "position %d", i)
			}
			last, err := m.Forward(context.Background(), m.NewCache(), toks, ForwardOptions{})
			require.NoError(t, err)
			require.Equal(t, got[(T-1)*testCfg.VocabSize:], last)
		})
	}
}

// TestKVCacheIncremental checks that every split of a sequence into a
// prefill and single-token steps gives the full forward's logits and keys.
func TestKVCacheIncremental(t *testing.T) {
	m, w := testModel(t)
	const T = 24
	V, H, D := testCfg.VocabSize, testCfg.NHead, testCfg.HeadDim()
	toks := testTokens(T, 99)
	want, ks, vs := naiveForward(testCfg, w, toks)
	ctx := context.Background()
	full, err := m.Forward(ctx, m.NewCache(), toks, ForwardOptions{AllLogits: true})
	require.NoError(t, err)
	for _, prefill := range []int{1, 5, T - 1} {
		c := m.NewCache()
		_, err := m.Forward(ctx, c, toks[:prefill], ForwardOptions{})
		require.NoError(t, err)
		for p := prefill; p < T; p++ {
			got, err := m.Forward(ctx, c, toks[p:p+1], ForwardOptions{})
			require.NoError(t, err)
			require.Equal(t, p+1, c.Len())
			requireClose(t, want[p], got, 1e-4, "prefill %d, step at %d vs naive", prefill, p)
			requireClose(t, f64(full[p*V:(p+1)*V]), got, 1e-5, "prefill %d, step at %d vs full forward", prefill, p)
			for l := 0; l < testCfg.NLayer; l++ {
				k, v := c.Snapshot(l)
				require.Len(t, k, H*(p+1)*D)
				for h := 0; h < H; h++ {
					for j := 0; j <= p; j++ {
						off := (h*(p+1) + j) * D
						requireClose(t, ks[l][h][j], k[off:off+D], 1e-4, "k layer %d head %d pos %d", l, h, j)
						requireClose(t, vs[l][h][j], v[off:off+D], 1e-4, "v layer %d head %d pos %d", l, h, j)
					}
				}
			}
		}
	}
}

func TestCacheTruncateReset(t *testing.T) {
	m, _ := testModel(t)
	ctx := context.Background()
	toks := testTokens(10, 3)
	c := m.NewCache()
	require.Equal(t, testCfg.NPositions, c.Cap())
	_, err := m.Forward(ctx, c, toks, ForwardOptions{})
	require.NoError(t, err)
	require.Error(t, c.Truncate(11))
	require.Error(t, c.Truncate(-1))
	require.NoError(t, c.Truncate(6))
	require.Equal(t, 6, c.Len())
	// Regenerating positions 6..9 after the truncation gives the same logits.
	got, err := m.Forward(ctx, c, toks[6:], ForwardOptions{})
	require.NoError(t, err)
	want, err := m.Forward(ctx, m.NewCache(), toks, ForwardOptions{})
	require.NoError(t, err)
	require.Equal(t, want, got)
	c.Reset()
	require.Equal(t, 0, c.Len())
	k, v := c.Snapshot(0)
	require.Empty(t, k)
	require.Empty(t, v)
	k, v = c.Snapshot(testCfg.NLayer)
	require.Nil(t, k)
	require.Nil(t, v)
}

func TestForwardInputErrors(t *testing.T) {
	m, _ := testModel(t)
	ctx := context.Background()
	P := testCfg.NPositions
	tests := []struct {
		name    string
		prefill int
		tokens  []int
		wantErr []string
	}{
		{"past context in one pass", 0, testTokens(P+1, 1), []string{"33 tokens requested", "32 of 32"}},
		{"past context after prefill", P - 3, testTokens(4, 1), []string{"4 tokens requested", "only 3 of 32", "holds 29"}},
		{"step on a full cache", P, []int{1}, []string{"1 tokens requested", "only 0 of 32"}},
		{"token too large", 3, []int{1, 97, 2}, []string{"token 97 at index 1", "[0,97)"}},
		{"negative token", 0, []int{-1}, []string{"token -1 at index 0"}},
		{"no tokens", 2, nil, []string{"no tokens"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := m.NewCache()
			if tt.prefill > 0 {
				_, err := m.Forward(ctx, c, testTokens(tt.prefill, 5), ForwardOptions{})
				require.NoError(t, err)
			}
			k0, v0 := c.Snapshot(1)
			_, err := m.Forward(ctx, c, tt.tokens, ForwardOptions{})
			require.Error(t, err)
			for _, s := range tt.wantErr {
				require.Contains(t, err.Error(), s)
			}
			require.Equal(t, tt.prefill, c.Len())
			k1, v1 := c.Snapshot(1)
			require.Equal(t, k0, k1)
			require.Equal(t, v0, v1)
		})
	}
	_, err := m.Forward(ctx, nil, []int{1}, ForwardOptions{})
	require.ErrorContains(t, err, "nil cache")
	other := *m
	other.Config.NPositions = 8
	_, err = m.Forward(ctx, other.NewCache(), []int{1}, ForwardOptions{})
	require.ErrorContains(t, err, "different shape")
}

func TestForwardContextCancel(t *testing.T) {
	m, _ := testModel(t)
	c := m.NewCache()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := m.Forward(ctx, c, testTokens(4, 1), ForwardOptions{})
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, 0, c.Len())

	// Cancelled from inside the pass, between layers.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	probe := ProbeFunc(func(x Captured) {
		if x.Name == "block_out" && x.Layer == 0 {
			cancel()
		}
	})
	_, err = m.Forward(ctx, c, testTokens(4, 1), ForwardOptions{Probe: probe})
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, 0, c.Len())
}

type captureLog struct{ got []Captured }

func (l *captureLog) Capture(x Captured) {
	x.Data = slices.Clone(x.Data)
	l.got = append(l.got, x)
}

func TestProbe(t *testing.T) {
	m, w := testModel(t)
	ctx := context.Background()
	C, H, D, I, V := testCfg.NEmbd, testCfg.NHead, testCfg.HeadDim(), testCfg.NInner, testCfg.VocabSize
	const prefill, T = 3, 5
	toks := testTokens(prefill+T, 11)
	S := prefill + T
	c := m.NewCache()
	_, err := m.Forward(ctx, c, toks[:prefill], ForwardOptions{})
	require.NoError(t, err)
	plain, err := m.Forward(ctx, m.NewCache(), toks, ForwardOptions{})
	require.NoError(t, err)

	var log captureLog
	got, err := m.Forward(ctx, c, toks[prefill:], ForwardOptions{Probe: &log})
	require.NoError(t, err)
	require.Equal(t, plain, got, "probe must not change the returned logits")

	type want struct {
		cp, layer int
		name      string
		shape     []int
	}
	wants := []want{{7, NoLayer, "embeddings", []int{T, C}}}
	for l := 0; l < testCfg.NLayer; l++ {
		wants = append(wants,
			want{1, l, "ln_1", []int{T, C}}, want{2, l, "q", []int{H, T, D}}, want{2, l, "k", []int{H, T, D}},
			want{2, l, "v", []int{H, T, D}}, want{4, l, "scores", []int{H, T, S}}, want{4, l, "probs", []int{H, T, S}},
			want{5, l, "attn_out", []int{T, C}}, want{1, l, "ln_2", []int{T, C}}, want{6, l, "gelu", []int{T, I}},
			want{6, l, "mlp_out", []int{T, C}}, want{7, l, "block_out", []int{T, C}})
	}
	wants = append(wants, want{8, NoLayer, "ln_f", []int{T, C}}, want{8, NoLayer, "logits", []int{T, V}},
		want{9, NoLayer, "last_logits", []int{V}}, want{9, NoLayer, "last_logprobs", []int{V}})
	require.Len(t, log.got, len(wants))
	byName := map[string]Captured{}
	for i, wt := range wants {
		g := log.got[i]
		require.Equal(t, wt.name, g.Name, "tensor %d", i)
		require.Equal(t, wt.cp, g.Checkpoint, g.Name)
		require.Equal(t, wt.layer, g.Layer, g.Name)
		require.Equal(t, wt.shape, g.Shape, g.Name)
		n := 1
		for _, d := range wt.shape {
			n *= d
		}
		require.Len(t, g.Data, n, g.Name)
		byName[fmt.Sprintf("%d.%s", g.Layer, g.Name)] = g
	}

	// Values: logits against the naive model; masks and probabilities.
	naive, ks, _ := naiveForward(testCfg, w, toks)
	requireClose(t, naive[S-1], byName["-1.last_logits"].Data, 1e-4, "last_logits")
	require.Equal(t, got, byName["-1.last_logits"].Data)
	for i := 0; i < T; i++ {
		requireClose(t, naive[prefill+i], byName["-1.logits"].Data[i*V:(i+1)*V], 1e-4, "logits row %d", i)
	}
	lp := byName["-1.last_logprobs"].Data
	var sum float64
	for i, v := range lp {
		sum += math.Exp(float64(v))
		require.InDelta(t, float64(got[i])-float64(got[0]), float64(v)-float64(lp[0]), 1e-5)
	}
	require.InDelta(t, 1, sum, 1e-5)
	for h := 0; h < H; h++ {
		for i := 0; i < T; i++ {
			requireClose(t, ks[1][h][prefill+i], byName["1.k"].Data[(h*T+i)*D:(h*T+i+1)*D], 1e-4, "k head %d row %d", h, i)
		}
	}
	for l := 0; l < testCfg.NLayer; l++ {
		sc, pr := byName[fmt.Sprintf("%d.scores", l)].Data, byName[fmt.Sprintf("%d.probs", l)].Data
		for h := 0; h < H; h++ {
			for i := 0; i < T; i++ {
				var rowSum float64
				for j := 0; j < S; j++ {
					idx := (h*T+i)*S + j
					if j > prefill+i {
						require.Equal(t, float32(-math.MaxFloat32), sc[idx])
						require.Zero(t, pr[idx])
					} else {
						require.Greater(t, pr[idx], float32(0))
					}
					rowSum += float64(pr[idx])
				}
				require.InDelta(t, 1, rowSum, 1e-5)
			}
		}
	}
	// q·kᵀ/√D from the captured q and k reproduces the captured scores.
	q, k := byName["0.q"].Data, byName["0.k"].Data
	var dot float32
	for d := 0; d < D; d++ {
		dot += q[(1*T+2)*D+d] * k[(1*T+1)*D+d]
	}
	require.InDelta(t, dot/float32(math.Sqrt(float64(D))), byName["0.scores"].Data[(1*T+2)*S+prefill+1], 1e-5)
}

// TestFaults checks that each fault changes the result, and only from the
// faulted layer on.
func TestFaults(t *testing.T) {
	m, _ := testModel(t)
	ctx := context.Background()
	toks := testTokens(9, 4)
	run := func() map[string][]float32 {
		var log captureLog
		_, err := m.Forward(ctx, m.NewCache(), toks, ForwardOptions{Probe: &log})
		require.NoError(t, err)
		out := map[string][]float32{}
		for _, g := range log.got {
			out[fmt.Sprintf("%d.%s", g.Layer, g.Name)] = g.Data
		}
		return out
	}
	clean := run()
	// first is the first tensor of the faulted layer that must differ.
	for _, tt := range []struct {
		name  string
		first string
	}{
		{"erf-gelu", "gelu"}, {"transposed-proj", "attn_out"}, {"no-causal-mask", "probs"},
		{"attn-scale", "scores"}, {"layernorm-eps", "ln_1"}, {"no-residual", "ln_2"},
	} {
		f, err := ParseFault(tt.name)
		require.NoError(t, err)
		require.Equal(t, tt.name, f.String())
		for _, layer := range []int{-1, 0, 1} {
			t.Run(fmt.Sprintf("%s/layer%d", tt.name, layer), func(t *testing.T) {
				m.InjectFault(f, layer)
				defer m.InjectFault(FaultNone, 0)
				got := run()
				from := max(layer, 0)
				require.Equal(t, clean["-1.embeddings"], got["-1.embeddings"])
				for l := 0; l < from; l++ {
					require.Equal(t, clean[fmt.Sprintf("%d.block_out", l)], got[fmt.Sprintf("%d.block_out", l)], "layer %d before the fault", l)
				}
				key := fmt.Sprintf("%d.%s", from, tt.first)
				require.NotEqual(t, clean[key], got[key], key)
				// All rows: without the mask the last position sees the same keys.
				require.NotEqual(t, clean["-1.logits"], got["-1.logits"])
			})
		}
	}
	m.InjectFault(FaultNone, -1)
	require.Equal(t, clean, run(), "FaultNone restores the clean model")
	_, err := ParseFault("bogus")
	require.ErrorContains(t, err, "bogus")
	require.Equal(t, "Fault(99)", Fault(99).String())
}

func BenchmarkForwardPrefill(b *testing.B) {
	cfg := Config{VocabSize: 2048, NPositions: 128, NEmbd: 128, NLayer: 4, NHead: 4, NInner: 512, LayerNormEpsilon: 1e-5}
	m := benchModel(b, cfg)
	toks := make([]int, cfg.NPositions)
	for i := range toks {
		toks[i] = (i * 37) % cfg.VocabSize
	}
	c := m.NewCache()
	b.ReportAllocs()
	for b.Loop() {
		c.Reset()
		if _, err := m.Forward(context.Background(), c, toks, ForwardOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(toks))/b.Elapsed().Seconds(), "tokens/s")
}

func BenchmarkDecodeStep(b *testing.B) {
	cfg := Config{VocabSize: 2048, NPositions: 128, NEmbd: 128, NLayer: 4, NHead: 4, NInner: 512, LayerNormEpsilon: 1e-5}
	m := benchModel(b, cfg)
	c := m.NewCache()
	ctx := context.Background()
	// 65 positions, so that the step's position is inside a block the
	// cache holds: the benchmark times the step, not a block's allocation
	// (once every DefaultBlockTokens steps in a real decode).
	if _, err := m.Forward(ctx, c, make([]int, 65), ForwardOptions{}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Truncate(65); err != nil {
			b.Fatal(err)
		}
		if _, err := m.Forward(ctx, c, []int{7}, ForwardOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}

func benchModel(b *testing.B, cfg Config) *Model {
	w := randomWeights(cfg, 1)
	m, err := Load(writeModel(b, configJSON(cfg), w.tensors("")))
	require.NoError(b, err)
	return m
}
