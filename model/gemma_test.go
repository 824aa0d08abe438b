package model

import (
	"math"
	"os"
	"path/filepath"
	"testing"

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
