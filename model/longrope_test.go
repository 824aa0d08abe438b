package model

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture"
)

// TestLongRopeConfig: longrope is read as HF's
// _compute_longrope_parameters reads it, or refused naming the field.
func TestLongRopeConfig(t *testing.T) {
	eight := []any{1, 1, 1, 1, 1, 1, 1, 1}
	for _, tc := range []struct {
		name    string
		edit    func(map[string]any)
		want    LongRope
		wantErr string
	}{
		{"committed", func(map[string]any) {}, LongRope{Original: 32, AttentionFactor: math.Sqrt(1 + math.Log(4)/math.Log(32))}, ""},
		{"su, its first name", func(m map[string]any) { m["rope_scaling"].(map[string]any)["type"] = "su" }, LongRope{Original: 32, AttentionFactor: math.Sqrt(1 + math.Log(4)/math.Log(32))}, ""},
		{"attention_factor given", func(m map[string]any) { m["rope_scaling"].(map[string]any)["attention_factor"] = 1.5 }, LongRope{Original: 32, AttentionFactor: 1.5}, ""},
		{"factor given", func(m map[string]any) { m["rope_scaling"].(map[string]any)["factor"] = 8 }, LongRope{Original: 32, AttentionFactor: math.Sqrt(1 + math.Log(8)/math.Log(32))}, ""},
		{"no longer context", func(m map[string]any) { m["original_max_position_embeddings"] = 128 }, LongRope{Original: 128, AttentionFactor: 1}, ""},
		{"short factors too few", func(m map[string]any) { m["rope_scaling"].(map[string]any)["short_factor"] = eight[:7] }, LongRope{}, "longrope needs short_factor: 8 positive numbers"},
		{"long factor zero", func(m map[string]any) {
			m["rope_scaling"].(map[string]any)["long_factor"] = append([]any{0}, eight[1:]...)
		}, LongRope{}, "longrope needs long_factor"},
		{"yarn", func(m map[string]any) { m["rope_scaling"] = map[string]any{"type": "yarn", "factor": 4} }, LongRope{}, `type "yarn" is not implemented (only llama3 and longrope)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			fixture.CopyFile(t, filepath.Join(fixture.FamilyModel("tiny-llama-phi3-longrope"), "config.json"), filepath.Join(dir, "config.json"))
			fixture.EditJSON(t, filepath.Join(dir, "config.json"), tc.edit)
			c, err := LoadConfig(filepath.Join(dir, "config.json"))
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.NotNil(t, c.LongRope)
			require.Equal(t, tc.want.Original, c.LongRope.Original)
			require.InDelta(t, tc.want.AttentionFactor, c.LongRope.AttentionFactor, 1e-15)
			require.Len(t, c.LongRope.Short, 8)
		})
	}
}

// TestLongRopePerCall: the factors are chosen a forward call at a time,
// by its last position, as HF's longrope_frequency_update does: a prefill
// past the pretrained context rotates every position with the long
// factors, while decoding to the same length keeps the keys of the calls
// before the switch as they were rotated; cos and sin carry the
// attention factor. Writing it to GGUF is refused.
func TestLongRopePerCall(t *testing.T) {
	m, err := Load(fixture.FamilyModel("tiny-llama-phi3-longrope"))
	require.NoError(t, err)
	r := m.rope
	require.False(t, r.useLong(31), "position 31: 32 tokens fit the pretrained 32")
	require.True(t, r.useLong(32))
	cos, sin := make([]float32, 8), make([]float32, 8)
	r.tables(cos, sin, 0, false)
	require.Equal(t, float32(1)*float32(m.Config.LongRope.AttentionFactor), cos[0], "cos 0 times the attention factor")
	short, long := make([]float32, 8), make([]float32, 8)
	r.tables(short, sin, 20, false)
	r.tables(long, sin, 20, true)
	require.Equal(t, short[0], long[0], "pair 0's factors are both 1")
	require.NotEqual(t, short[7], long[7])

	toks := make([]int, 40)
	for i := range toks {
		toks[i] = 100 + 37*i
	}
	whole := logitsOf(t, m, toks)
	c := m.NewCache()
	_, err = m.Forward(t.Context(), c, toks[:30], ForwardOptions{})
	require.NoError(t, err)
	var stepped []float32
	for _, tok := range toks[30:] {
		stepped, err = m.Forward(t.Context(), c, []int{tok}, ForwardOptions{})
		require.NoError(t, err)
	}
	require.NotEqual(t, whole, stepped, "keys rotated short before the switch stay so")
}
