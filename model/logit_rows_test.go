package model

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/tensors"
)

// TestLogitRows: a probed forward asked for some positions' logits
// computes those and the last, with the bits the head of every position
// gives them, and says which they are (Captured.Rows); the last position's
// logits are returned as always. GPT-2 and Gemma 2 (whose final soft-cap
// follows the head).
func TestLogitRows(t *testing.T) {
	gpt2, _ := testModel(t)
	gemma2, err := LoadWith(fixture.FamilyModel("tiny-llama-gemma2"), LoadOptions{})
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		m    *Model
	}{{"gpt2", gpt2}, {"gemma2", gemma2}} {
		V := tc.m.Config.VocabSize
		const T = 7
		toks := testTokens(T, 5)
		for i := range toks {
			toks[i] %= V
		}
		all, err := tc.m.Forward(context.Background(), tc.m.NewCache(), toks, ForwardOptions{AllLogits: true})
		require.NoError(t, err)
		for _, rows := range [][]int{{4, 0, 4}, {}, {6}, {-1, 9, 2}} {
			var got Captured
			probe := ProbeFunc(func(c Captured) {
				if c.Name == tensors.Logits {
					got = Captured{Shape: slices.Clone(c.Shape), Rows: slices.Clone(c.Rows), Data: slices.Clone(c.Data)}
				}
			})
			last, err := tc.m.Forward(context.Background(), tc.m.NewCache(), toks, ForwardOptions{Probe: probe, LogitRows: rows})
			require.NoError(t, err)
			want := headRows(rows, T)
			require.Equal(t, want, got.Rows, "%s %v", tc.name, rows)
			require.Equal(t, []int{len(want), V}, got.Shape)
			for i, r := range want {
				require.Equal(t, all[r*V:(r+1)*V], got.Data[i*V:(i+1)*V], "%s %v: position %d", tc.name, rows, r)
			}
			require.Equal(t, all[(T-1)*V:], last)
		}
	}
}

func TestHeadRows(t *testing.T) {
	for _, tc := range []struct {
		rows []int
		T    int
		want []int
	}{
		{nil, 3, []int{2}},
		{[]int{2, 0, 2}, 5, []int{0, 2, 4}},
		{[]int{4}, 5, []int{4}},
		{[]int{-1, 7, 1}, 5, []int{1, 4}},
	} {
		require.Equal(t, tc.want, headRows(tc.rows, tc.T), "%v of %d", tc.rows, tc.T)
	}
}
