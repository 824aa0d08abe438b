package model

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/internal/fixture"
)

// TestLongRopeGGUF: Phi-3's longrope is written as llama.cpp's converter
// writes it (rope_factors_long/short.weight, original_context_length,
// attn_factor), by WriteGGUF and ConvertGGUF alike, and read back to the
// same config and the same logits, bit for bit, before and past the
// short/long switch, in one pass and stepped; a file with one factor
// tensor, or factors of the wrong width, is refused naming it.
func TestLongRopeGGUF(t *testing.T) {
	dir := fixture.FamilyModel("tiny-llama-phi3-longrope")
	m, err := Load(dir)
	require.NoError(t, err)
	const vocab = "../testdata/tokenizer/phi-3/ggml-vocab-phi-3.gguf"
	f := convertFile(gguf.GGMLTypeF32, dir)
	want, got := filepath.Join(t.TempDir(), "want.gguf"), filepath.Join(t.TempDir(), "got.gguf")
	_, err = m.WriteGGUF(want, f)
	require.NoError(t, err)
	_, err = ConvertGGUF(dir, got, f, nil)
	require.NoError(t, err)
	requireSameFile(t, want, got)

	kv, ts, err := m.GGUF(gguf.GGMLTypeF32)
	require.NoError(t, err)
	s := m.Config.LongRope
	keys := map[string]any{}
	for _, e := range kv {
		keys[e.Key] = e.Value.V
	}
	require.Equal(t, uint32(s.Original), keys["phi3.rope.scaling.original_context_length"])
	require.Equal(t, float32(s.AttentionFactor), keys["phi3.rope.scaling.attn_factor"])
	var names []string
	for _, td := range ts {
		names = append(names, td.Name)
	}
	require.Equal(t, []string{ggufRopeLong, ggufRopeShort}, names[slices.Index(names, ggufRopeLong):][:2], "long then short, as the converter")

	path := filepath.Join(t.TempDir(), "m.gguf")
	require.NoError(t, os.WriteFile(path, llamaImage(t, m, gguf.GGMLTypeF32, vocab, nil), 0o644))
	g, err := Load(path)
	require.NoError(t, err)
	require.Equal(t, *s, *g.Config.LongRope, "the factors, the pretrained context and HF's default attention factor read back as config.json gives them")
	toks := make([]int, 40)
	for i := range toks {
		toks[i] = 100 + 37*i
	}
	for _, n := range []int{20, 40} { // before and past the pretrained 32
		require.Equal(t, logitsOf(t, m, toks[:n]), logitsOf(t, g, toks[:n]), "%d tokens", n)
		a0, b0 := prefillThenStep(t, m, toks[:n])
		a1, b1 := prefillThenStep(t, g, toks[:n])
		require.Equal(t, a0, a1, "%d tokens: prefill", n)
		require.Equal(t, b0, b1, "%d tokens: step", n)
	}

	for _, tc := range []struct {
		name, wantErr string
		edit          ggufEdit
	}{
		{"short factors missing", `a file has both or neither`, func(kv []gguf.KV, ts []gguf.TensorData) ([]gguf.KV, []gguf.TensorData) {
			return kv, slices.DeleteFunc(ts, func(td gguf.TensorData) bool { return td.Name == ggufRopeShort })
		}},
		{"pretrained context missing", `key phi3.rope.scaling.original_context_length: value -1 is out of range`, func(kv []gguf.KV, ts []gguf.TensorData) ([]gguf.KV, []gguf.TensorData) {
			return slices.DeleteFunc(kv, func(e gguf.KV) bool { return e.Key == "phi3.rope.scaling.original_context_length" }), ts
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "m.gguf")
			require.NoError(t, os.WriteFile(path, llamaImage(t, m, gguf.GGMLTypeF32, vocab, tc.edit), 0o644))
			_, err := Load(path)
			require.ErrorContains(t, err, tc.wantErr)
		})
	}

	llama := windowed(t, "tiny-llama")
	llama.Config.LongRope = s
	_, _, err = llama.GGUF(gguf.GGMLTypeF32)
	require.ErrorContains(t, err, "llama with rope_scaling longrope is not written")
}
