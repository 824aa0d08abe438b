package model

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/safetensors"
	"github.com/stretchr/testify/require"
)

// TestGemmaFinalSoftcap: Gemma 2's logits are tanh(z/c)·c of the head's
// z, and no-softcap injected in every layer drops that cap too (with the
// attention's cap off, so that the blocks compute the same).
func TestGemmaFinalSoftcap(t *testing.T) {
	m, err := Load(filepath.Join("..", "testdata", "tiny-llama-gemma2"))
	require.NoError(t, err)
	g := *m.Config.Gemma
	g.AttnSoftcap = 0
	m.Config.Gemma = &g
	tokens := []int{1, 450, 4996, 17354, 1701}
	capped := logitsOf(t, m, tokens)
	m.InjectFault(FaultNoSoftcap, -1)
	plain := logitsOf(t, m, tokens)
	c := float32(g.FinalSoftcap)
	changed := 0
	for i, z := range plain {
		want := float32(math.Tanh(float64(z/c))) * c
		require.Equal(t, want, capped[i], "logit %d", i)
		if capped[i] != z {
			changed++
		}
	}
	require.Greater(t, changed, len(plain)/2)
	// In one block only, the fault leaves the final cap alone.
	m.InjectFault(FaultNoSoftcap, 0)
	require.Equal(t, capped, logitsOf(t, m, tokens))
}

// TestGemmaNormsHoldOnePlusW: the HF loader adds 1 to every Gemma norm
// weight (HF's checkpoint holds w, the forward multiplies by 1 + w) and to
// no other architecture's.
func TestGemmaNormsHoldOnePlusW(t *testing.T) {
	for _, tc := range []struct {
		model  string
		offset float32
	}{{"tiny-llama-gemma3", 1}, {"tiny-llama-qwen3", 0}} {
		dir := filepath.Join("..", "testdata", tc.model)
		m, err := Load(dir)
		require.NoError(t, err)
		raw := hfVectors(t, dir)
		b := m.h[1]
		for name, held := range map[string][]float32{
			"model.layers.1.input_layernorm.weight":  b.ln1W,
			"model.layers.1.self_attn.q_norm.weight": b.qNormW,
			"model.layers.1.self_attn.k_norm.weight": b.kNormW,
			"model.norm.weight":                      m.lnfW,
		} {
			w := raw[name]
			require.Len(t, held, len(w), name)
			for i := range w {
				require.Equal(t, w[i]+tc.offset, held[i], "%s %s[%d]", tc.model, name, i)
			}
		}
	}
}

// hfVectors is every one-dimensional tensor of dir's model.safetensors,
// as float32.
func hfVectors(t *testing.T, dir string) map[string][]float32 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "model.safetensors"))
	require.NoError(t, err)
	f, err := safetensors.Parse(b)
	require.NoError(t, err)
	out := map[string][]float32{}
	for _, ts := range f.Tensors {
		if len(ts.Shape) == 1 {
			out[ts.Name] = f.Float32s(ts)
		}
	}
	return out
}

// TestGemmaWeightsCache: a Gemma 3 model restored from the weights cache
// (its norms held as 1 + w, its local rope) computes what a fresh load
// does.
func TestGemmaWeightsCache(t *testing.T) {
	dir := filepath.Join("..", "testdata", "tiny-llama-gemma3")
	fresh, err := Load(dir)
	require.NoError(t, err)
	tokens := []int{1, 450, 4996, 17354, 1701, 975, 278, 17366, 11203, 29889}
	want := logitsOf(t, fresh, tokens)
	cache := t.TempDir()
	for _, state := range []string{"written to ", "read from "} {
		m, err := LoadWith(dir, LoadOptions{WeightsCache: cache})
		require.NoError(t, err)
		require.Contains(t, m.WeightsCache, state)
		require.Equal(t, fresh.local.invFreq, m.local.invFreq)
		require.Equal(t, want, logitsOf(t, m, tokens), state)
	}
}

// TestGemmaGGUFRefused: a Gemma config llama.cpp's layout cannot say
// (its scale, window pattern and local rope base are fixed) is refused by
// convert and WriteGGUF, naming the setting; the committed configs are
// written and read back as the same model.
func TestGemmaGGUFRefused(t *testing.T) {
	for _, tc := range []struct {
		model string
		edit  func(m map[string]any)
		want  string
	}{
		{"tiny-llama-gemma2", func(m map[string]any) { m["query_pre_attn_scalar"] = 24 }, "query_pre_attn_scalar 24"},
		{"tiny-llama-gemma2", func(m map[string]any) { m["final_logit_softcapping"] = nil }, "without a soft-cap"},
		{"tiny-llama-gemma3", func(m map[string]any) { m["sliding_window_pattern"] = 2 }, "llama.cpp's layer pattern"},
		{"tiny-llama-gemma3", func(m map[string]any) { m["rope_local_base_freq"] = 20000 }, "rope_local_base_freq 20000"},
		{"tiny-llama-gemma3", func(map[string]any) {}, ""},
		{"tiny-llama-gemma", func(map[string]any) {}, ""},
		// Gemma 1 reads no query_pre_attn_scalar: llama.cpp's 1/√head_dim is its scale.
		{"tiny-llama-gemma", func(m map[string]any) { m["query_pre_attn_scalar"] = 24 }, ""},
	} {
		dir := fixture.CopyDir(t, filepath.Join("..", "testdata", tc.model))
		fixture.EditJSON(t, filepath.Join(dir, "config.json"), tc.edit)
		path := filepath.Join(t.TempDir(), "m.gguf")
		_, err := ConvertGGUF(dir, path, GGUFFile{Type: gguf.GGMLTypeF32}, nil)
		m, lerr := Load(dir)
		require.NoError(t, lerr)
		_, werr := m.WriteGGUF(filepath.Join(t.TempDir(), "w.gguf"), GGUFFile{Type: gguf.GGMLTypeF32})
		if tc.want != "" {
			require.ErrorContains(t, err, tc.want, tc.model)
			require.ErrorContains(t, werr, tc.want, tc.model)
			continue
		}
		require.NoError(t, err)
		require.NoError(t, werr)
		g, err := Load(path)
		require.NoError(t, err)
		require.Equal(t, m.Config.Windows, g.Config.Windows)
		require.Equal(t, *m.Config.Gemma, *g.Config.Gemma)
		tokens := []int{1, 450, 4996, 17354, 1701, 975, 278, 17366, 11203, 29889}
		require.Equal(t, logitsOf(t, m, tokens), logitsOf(t, g, tokens), "the file's norms hold 1 + w: not added again")
	}
}

// TestGemma1Config: GemmaConfig's defaults, what Gemma 1 reads otherwise
// than Gemma 2 (its scale is head_dim^-½ whatever query_pre_attn_scalar
// says; no soft-cap, window or post norms) and what it refuses, naming
// the field as pytorch/gemma_torch.py does (test_gemma_torch.py).
func TestGemma1Config(t *testing.T) {
	base := filepath.Join("..", "testdata", "tiny-llama-gemma", "config.json")
	load := func(t *testing.T, edit func(map[string]any)) (Config, error) {
		path := filepath.Join(t.TempDir(), "config.json")
		fixture.CopyFile(t, base, path)
		fixture.EditJSON(t, path, edit)
		return LoadConfig(path)
	}
	c, err := load(t, func(m map[string]any) {
		for _, k := range []string{"num_key_value_heads", "head_dim", "rms_norm_eps", "rope_theta", "max_position_embeddings",
			"tie_word_embeddings", "hidden_act", "hidden_activation", "bos_token_id", "eos_token_id"} {
			delete(m, k)
		}
		m["num_attention_heads"] = 16
		// What Gemma 2 reads and Gemma 1 does not.
		m["query_pre_attn_scalar"], m["attn_logit_softcapping"], m["final_logit_softcapping"] = 24, 50.0, 30.0
		m["sliding_window"], m["layer_types"] = 4, []string{"sliding_attention", "sliding_attention"}
	})
	require.NoError(t, err)
	require.Equal(t, 16, c.KVHeads(), "GemmaConfig's num_key_value_heads")
	require.Equal(t, 256, c.HeadDim())
	require.Equal(t, 1e-6, c.RMSNormEps)
	require.Equal(t, 10000.0, c.RopeTheta)
	require.Equal(t, 8192, c.NPositions)
	require.True(t, c.Tied)
	require.Equal(t, 2, c.BOSTokenID)
	require.Equal(t, []int{1}, c.EOSTokenIDs)
	require.Nil(t, c.Windows)
	require.Equal(t, Gemma{Version: 1, QueryPreAttnScalar: 256}, *c.Gemma)
	require.False(t, c.Gemma.sandwich())

	for _, tc := range []struct {
		name string
		edit func(map[string]any)
		want string // "" accepted
	}{
		{"null hidden_activation", func(m map[string]any) { m["hidden_activation"] = nil }, ""},
		{"legacy hidden_act gelu", func(m map[string]any) { m["hidden_act"] = "gelu" }, `field "hidden_act": value "gelu"`},
		{"hidden_activation gelu", func(m map[string]any) { m["hidden_activation"] = "gelu" }, `field "hidden_activation": value "gelu"`},
		{"adaptive norm", func(m map[string]any) { m["use_adarms"] = true }, `field "use_adarms"`},
		{"rope_parameters", func(m map[string]any) { m["rope_parameters"] = map[string]any{"rope_theta": 10000.0} }, `field "rope_parameters"`},
		{"yarn", func(m map[string]any) { m["rope_scaling"] = map[string]any{"rope_type": "yarn", "factor": 2.0} }, `field "rope_scaling"`},
		{"attention bias", func(m map[string]any) { m["attention_bias"] = true }, `field "attention_bias"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, tc.edit)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
}
