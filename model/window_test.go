package model

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/kvcache"
)

// TestSlidingWindowConfig: each architecture's sliding window is read as
// its HF config class derives it, per layer, never dropped.
func TestSlidingWindowConfig(t *testing.T) {
	for _, tc := range []struct {
		name, model string
		edit        func(map[string]any)
		want        []int  // Config.Windows
		wantErr     string // instead
	}{
		{"llama has none", "tiny-llama", func(m map[string]any) { m["sliding_window"] = 8 }, nil, ""},
		{"mistral's default", "tiny-llama", func(m map[string]any) { m["model_type"] = "mistral" }, []int{4096, 4096}, ""},
		{"mistral's null", "tiny-llama", func(m map[string]any) { m["model_type"], m["sliding_window"] = "mistral", nil }, nil, ""},
		{"mistral's window", "tiny-llama", func(m map[string]any) { m["model_type"], m["sliding_window"] = "mistral", 8 }, []int{8, 8}, ""},
		{"mistral by class", "tiny-llama", func(m map[string]any) {
			delete(m, "model_type")
			m["architectures"], m["sliding_window"] = []string{"MistralForCausalLM"}, 5
		}, []int{5, 5}, ""},
		{"phi3's", "tiny-llama-phi3", func(m map[string]any) { m["sliding_window"] = 7 }, []int{7, 7}, ""},
		{"phi3's absent", "tiny-llama-phi3", func(m map[string]any) { delete(m, "sliding_window") }, nil, ""},
		{"qwen2 off", "tiny-llama-qwen2", func(m map[string]any) { m["sliding_window"] = 4 }, nil, ""},
		{"qwen2 from max_window_layers", "tiny-llama-qwen2", func(m map[string]any) {
			m["use_sliding_window"], m["sliding_window"], m["max_window_layers"] = true, 4, 1
		}, []int{0, 4}, ""},
		{"qwen2 default layers", "tiny-llama-qwen2", func(m map[string]any) {
			m["use_sliding_window"], m["sliding_window"] = true, 4
		}, []int{0, 0}, ""},
		{"qwen3 layer_types", "tiny-llama-qwen3", func(m map[string]any) {
			m["use_sliding_window"], m["sliding_window"] = true, 6
			m["layer_types"] = []string{"sliding_attention", "full_attention"}
		}, []int{6, 0}, ""},
		{"bad layer_types", "tiny-llama-qwen3", func(m map[string]any) {
			m["use_sliding_window"], m["layer_types"] = true, []string{"chunked_attention", "full_attention"}
		}, nil, `field "layer_types": layer 0 is "chunked_attention"`},
		{"short layer_types", "tiny-llama-qwen3", func(m map[string]any) {
			m["use_sliding_window"], m["layer_types"] = true, []string{"full_attention"}
		}, nil, `field "layer_types": 1 entries for 2 layers`},
		{"negative window", "tiny-llama", func(m map[string]any) { m["model_type"], m["sliding_window"] = "mistral", -1 }, nil, `field "sliding_window": value -1 is out of range`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			fixture.CopyFile(t, filepath.Join(fixture.FamilyModel(tc.model), "config.json"), filepath.Join(dir, "config.json"))
			fixture.EditJSON(t, filepath.Join(dir, "config.json"), tc.edit)
			c, err := LoadConfig(filepath.Join(dir, "config.json"))
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, c.Windows)
		})
	}
}

// windowed is a tiny Llama-family model whose layers slide over the given
// windows.
func windowed(t *testing.T, name string, windows ...int) *Model {
	t.Helper()
	m, err := Load(fixture.FamilyModel(name))
	require.NoError(t, err)
	m.Config.Windows = windows
	return m
}

// TestSlidingWindowAttention: a query sees itself and the window−1 keys
// before it: its probabilities are zero elsewhere and sum to one; a
// window as long as the sequence changes nothing, bit for bit; a decode
// step sees what the prefill's row saw.
func TestSlidingWindowAttention(t *testing.T) {
	toks := llamaTokens
	T := len(toks)
	for _, name := range []string{"tiny-llama", "tiny-llama-qwen3"} {
		full := windowed(t, name)
		fullT, fullLogits := captureAll(t, full, toks)
		long := windowed(t, name, T, T+5)
		longT, longLogits := captureAll(t, long, toks)
		require.Equal(t, fullT, longT, "%s: a window of the whole sequence is no window", name)
		require.Equal(t, fullLogits, longLogits)

		for _, ws := range [][]int{{1, 1}, {3, 0}, {5, 7}} {
			m := windowed(t, name, ws...)
			got, _ := captureAll(t, m, toks)
			H := m.Config.NHead
			for l, w := range ws {
				probs := got[fmt.Sprintf("probs/%d", l)]
				require.Len(t, probs, H*T*T)
				for h := range H {
					for q := range T {
						row := probs[(h*T+q)*T : (h*T+q+1)*T]
						var sum float64
						for k, p := range row {
							seen := k <= q && (w == 0 || q-k < w)
							if !seen {
								require.Zero(t, p, "%s windows %v: layer %d head %d query %d key %d", name, ws, l, h, q, k)
							}
							sum += float64(p)
						}
						require.InDelta(t, 1, sum, 1e-5)
					}
				}
			}
			if ws[0] < T {
				require.NotEqual(t, fullT["attn_out/0"], got["attn_out/0"], "the window changes layer 0")
			}
			all, step := prefillThenStep(t, m, toks)
			V := m.Config.VocabSize
			fromPrefill := logitsOf(t, m, toks)
			require.Equal(t, fromPrefill[len(fromPrefill)-V:], step, "%s windows %v: decode step", name, ws)
			require.Len(t, all, (T-1)*V)
		}
	}
}

// TestWindowFaults: window-off-by-one and window-ignored change the
// forward of a model whose window a sequence passes, and apply only where
// some layer slides.
func TestWindowFaults(t *testing.T) {
	m := windowed(t, "tiny-llama", 4, 4)
	want := logitsOf(t, m, llamaTokens)
	for _, f := range []Fault{FaultWindowOffByOne, FaultWindowIgnored} {
		require.True(t, f.AppliesTo(m.Config), f.String())
		require.False(t, f.AppliesTo(windowed(t, "tiny-llama").Config), f.String())
		m.InjectFault(f, -1)
		got := logitsOf(t, m, llamaTokens)
		m.InjectFault(FaultNone, -1)
		diff := 0.0
		for i := range got {
			diff = math.Max(diff, math.Abs(float64(got[i]-want[i])))
		}
		require.Greater(t, diff, 1e-3, f.String())
	}
}

// TestSlidingWindowGGUF: a window every layer shares is written as
// llama.cpp's attention.sliding_window (Mistral's under llama, its
// converter's architecture) and read back; per-layer windows are refused.
func TestSlidingWindowGGUF(t *testing.T) {
	for _, tc := range []struct {
		name, arch string
		windows    []int
	}{
		{"tiny-llama", ArchLlama, []int{6, 6}},
		{"tiny-llama-phi3", ArchPhi3, []int{5, 5}},
	} {
		m := windowed(t, tc.name, tc.windows...)
		vocab := llamaSPMVocab
		if tc.arch == ArchPhi3 {
			vocab = "../testdata/tokenizer/phi-3/ggml-vocab-phi-3.gguf"
		}
		path := filepath.Join(t.TempDir(), "m.gguf")
		require.NoError(t, os.WriteFile(path, llamaImage(t, m, gguf.GGMLTypeF32, vocab, nil), 0o644))
		g, err := Load(path)
		require.NoError(t, err)
		require.Equal(t, tc.windows, g.Config.Windows)
		want := tc.arch
		if want == ArchLlama {
			want = ArchMistral // a llama file with a window is a Mistral's
		}
		require.Equal(t, want, g.Config.ModelType)
		require.Equal(t, logitsOf(t, m, llamaTokens), logitsOf(t, g, llamaTokens))
	}
	mistral := windowed(t, "tiny-llama", 6, 6)
	mistral.Config.ModelType = ArchMistral
	kv, _, err := mistral.GGUF(gguf.GGMLTypeF32)
	require.NoError(t, err)
	require.Equal(t, ArchLlama, kv[0].Value.V, "Mistral is written as llama.cpp's llama")

	perLayer := windowed(t, "tiny-llama-qwen2", 0, 4)
	_, _, err = perLayer.GGUF(gguf.GGMLTypeF32)
	require.ErrorContains(t, err, "sliding windows on some layers only ([0 4]) is not written")
}

// TestSlidingWindowSkipsBlocks: blocks wholly before the window are
// skipped, not scored and masked, and that changes no bit: a prefill and
// decode steps on caches of 4-position blocks (most of them skipped) give
// a single 128-position block's logits, bit for bit.
func TestSlidingWindowSkipsBlocks(t *testing.T) {
	m := windowed(t, "tiny-llama-mistral", 5, 9)
	run := func(block int) [][]float32 {
		p, err := m.NewKVPool(kvcache.Options{BlockTokens: block})
		require.NoError(t, err)
		c := p.NewCache()
		var out [][]float32
		logits, err := m.Forward(t.Context(), c, llamaTokens[:12], ForwardOptions{AllLogits: true})
		require.NoError(t, err)
		out = append(out, logits)
		for _, tok := range llamaTokens[12:] {
			logits, err = m.Forward(t.Context(), c, []int{tok}, ForwardOptions{})
			require.NoError(t, err)
			out = append(out, logits)
		}
		return out
	}
	require.Equal(t, run(128), run(4))
}
