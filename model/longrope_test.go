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

// TestLongRopeSequence: a call whose last position is past the
// pretrained context rotates with the long factors, and so does every
// later call of its sequence; cos and sin carry the attention factor.
// As Hugging Face's generate has it (Phi-3 drops its cache when the
// sequence first passes the context), a sequence's keys are all rotated
// alike: decoding across the switch restarts the sequence once, and
// every step's logits are those of one pass over the whole sequence, to
// the bit. A prompt run in chunks after PlanSequence computes what one
// pass does without restarting; a captured pass refuses to restart.
func TestLongRopeSequence(t *testing.T) {
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
	c := m.NewCache()
	_, err = m.Forward(t.Context(), c, toks[:30], ForwardOptions{})
	require.NoError(t, err)
	require.Zero(t, c.Variant(), "30 positions: short")
	for n := 31; n <= len(toks); n++ {
		stepped, err := m.Forward(t.Context(), c, toks[n-1:n], ForwardOptions{})
		require.NoError(t, err)
		require.Equal(t, logitsOf(t, m, toks[:n]), stepped, "step to %d positions", n)
		require.Equal(t, n, c.Len())
	}
	require.Equal(t, toks, c.Tokens())

	whole := logitsOf(t, m, toks)
	for _, plan := range []bool{true, false} {
		c := m.NewCache()
		if plan {
			m.PlanSequence(c, len(toks))
		}
		var last []float32
		for c0 := 0; c0 < len(toks); c0 += 8 {
			last, err = m.Forward(t.Context(), c, toks[c0:c0+8], ForwardOptions{})
			require.NoError(t, err)
			if plan {
				require.Equal(t, longVariant, c.Variant(), "planned: long from the first chunk")
			}
		}
		require.Equal(t, whole, last, "chunks of 8, planned %v", plan)
	}

	c = m.NewCache()
	_, err = m.Forward(t.Context(), c, toks[:30], ForwardOptions{})
	require.NoError(t, err)
	_, err = m.Forward(t.Context(), c, toks[30:34], ForwardOptions{Probe: ProbeFunc(func(Captured) {})})
	require.ErrorContains(t, err, "a captured pass cannot restart")
	require.Equal(t, toks[:30], c.Tokens(), "refused: the cache is as it was")
}
