package model

import (
	"math"
	"slices"
	"testing"

	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/kvcache"
	"github.com/stretchr/testify/require"
)

// slideRun is a prefill of llamaTokens[:12] and greedy decode steps up to
// n positions on a fresh cache of a pool made with opt; it returns every
// pass's logits as bits, and the most blocks the pool held after a pass.
func slideRun(t *testing.T, m *Model, opt kvcache.Options, n int) (bits [][]uint32, maxHeld int) {
	t.Helper()
	p, err := m.NewKVPool(opt)
	require.NoError(t, err)
	c := p.NewCache()
	toks := llamaTokens[:12]
	for c.Len() < n {
		logits, err := m.Forward(t.Context(), c, toks, ForwardOptions{})
		require.NoError(t, err)
		row := make([]uint32, len(logits))
		for i, x := range logits {
			row[i] = math.Float32bits(x)
		}
		bits = append(bits, row)
		maxHeld = max(maxHeld, p.Stats().HeldBlocks)
		toks = []int{slices.Index(logits, slices.Max(logits))}
	}
	return bits, maxHeld
}

// TestFreeBehindWindow: with FreeBehindWindow, a model whose every layer
// has a window gives back the blocks every layer's window has left, so a
// generation of 4× the window holds at most the blocks a window's keys
// span, and its logits are those of a cache that keeps everything, bit for
// bit. A model with a layer (or a fault) that sees every key frees nothing.
func TestFreeBehindWindow(t *testing.T) {
	const n = 12 + 4*24 // the prompt and 4× tiny-llama-mistral's window
	for _, tc := range []struct {
		name    string
		windows []int
		fault   Fault
		block   int
		f16     bool
		frees   bool
	}{
		{"mistral", []int{24, 24}, FaultNone, 16, false, true},
		{"mistral blocks of 4, float16", []int{24, 24}, FaultNone, 4, true, true},
		{"windows of 5 and 9", []int{5, 9}, FaultNone, 4, false, true},
		{"a global layer", []int{24, 0}, FaultNone, 4, false, false},
		{"window-ignored", []int{24, 24}, FaultWindowIgnored, 4, false, false},
		{"no causal mask", []int{24, 24}, FaultNoCausalMask, 4, false, false},
		{"window-off-by-one", []int{24, 24}, FaultWindowOffByOne, 4, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := windowed(t, "tiny-llama-mistral", tc.windows...)
			if tc.fault != FaultNone {
				m.InjectFault(tc.fault, -1)
			}
			opt := kvcache.Options{BlockTokens: tc.block, Float16: tc.f16}
			kept, keptHeld := slideRun(t, m, opt, n)
			opt.FreeBehindWindow = true
			freed, freedHeld := slideRun(t, m, opt, n)
			require.Equal(t, kept, freed, "logits bits with and without freeing")
			require.Equal(t, (n+tc.block-1)/tc.block, keptHeld)
			if !tc.frees {
				require.Equal(t, keptHeld, freedHeld)
				return
			}
			// A decode step reads w keys (w+1 under window-off-by-one):
			// they span at most ⌈(w−1)/B⌉+1 blocks.
			w := slices.Max(tc.windows)
			if tc.fault == FaultWindowOffByOne {
				w++
			}
			require.LessOrEqual(t, freedHeld, (w-1+tc.block-1)/tc.block+1)
		})
	}
}

// TestFreedCacheRefusesTheWindowBack: a cache truncated back before the
// window it gave back cannot run a pass that would read the keys given
// back, nor be truncated below them.
func TestFreedCacheRefusesTheWindowBack(t *testing.T) {
	m := windowed(t, "tiny-llama-mistral", 5, 5)
	p, err := m.NewKVPool(kvcache.Options{BlockTokens: 4, FreeBehindWindow: true})
	require.NoError(t, err)
	c := p.NewCache()
	_, err = m.Forward(t.Context(), c, llamaTokens[:12], ForwardOptions{})
	require.NoError(t, err)
	_, err = m.Forward(t.Context(), c, llamaTokens[12:13], ForwardOptions{}) // reads 8..12: gives back 0..7
	require.NoError(t, err)
	require.Equal(t, 8, c.Start())
	require.ErrorContains(t, c.Truncate(7), "gave back the positions before 8")
	require.NoError(t, c.Truncate(9))
	_, err = m.Forward(t.Context(), c, llamaTokens[9:10], ForwardOptions{}) // reads 5..9
	require.ErrorContains(t, err, "reads keys from position 5, but the cache gave back those before 8")
	require.Equal(t, 9, c.Len(), "a refused pass leaves the cache as it was")
}

// BenchmarkFreeBehindWindow generates 4× tiny-llama-mistral's window of
// 24 past a 12-token prompt, keeping every block or giving back those the
// window left, and reports the blocks of 16 positions held at the end and
// at the peak, and the decode time.
func BenchmarkFreeBehindWindow(b *testing.B) {
	m, err := Load(fixture.FamilyModel("tiny-llama-mistral"))
	require.NoError(b, err)
	const n = 12 + 4*24
	for _, free := range []bool{false, true} {
		b.Run(map[bool]string{false: "kept", true: "freed"}[free], func(b *testing.B) {
			var st kvcache.Stats
			for b.Loop() {
				p, err := m.NewKVPool(kvcache.Options{FreeBehindWindow: free})
				require.NoError(b, err)
				c := p.NewCache()
				logits, err := m.Forward(b.Context(), c, llamaTokens[:12], ForwardOptions{})
				require.NoError(b, err)
				for c.Len() < n {
					next := slices.Index(logits, slices.Max(logits))
					logits, err = m.Forward(b.Context(), c, []int{next}, ForwardOptions{})
					require.NoError(b, err)
				}
				st = p.Stats()
			}
			b.ReportMetric(float64(st.HeldBlocks), "held-blocks")
			b.ReportMetric(float64(st.PeakBlocks), "peak-blocks")
			b.ReportMetric(float64(st.HeldBlocks)*float64(st.BlockBytes)/1024, "held-KiB")
		})
	}
}
