package checkpoints

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/loader"
	"github.com/llorch/llorch-check/references"
	"github.com/llorch/llorch-check/tensors"
	"github.com/llorch/llorch-check/tokenizer"
	"github.com/stretchr/testify/require"
)

// TestRoutingFlipReport constructs routing near-ties in a copy of the
// mixtral reference set (its router logits and chosen experts at one
// token) and requires the experts mismatch to be named a routing flip
// with both margins, or a routing that differs when a margin is past the
// logits' tolerance.
func TestRoutingFlipReport(t *testing.T) {
	tests := []struct {
		name              string
		refA, refB        float32 // the reference's logits of its choice (a) and Go's (b)
		goA, goB          float32
		noGoLogits        bool
		nearTie           bool
		refMargin, goMarg float64
	}{
		{name: "near tie", refA: 0.5 + 3e-5, refB: 0.5, goA: 0.5, goB: 0.5 + 2e-5, nearTie: true, refMargin: 3e-5, goMarg: 2e-5},
		{name: "exact tie", refA: 1.25, refB: 1.25, goA: 1.25, goB: 1.25, nearTie: true},
		{name: "reference margin too wide", refA: 0.8, refB: 0.5, goA: 0.5, goB: 0.5 + 2e-5, refMargin: 0.3, goMarg: 2e-5},
		{name: "Go's margin too wide", refA: 0.5 + 3e-5, refB: 0.5, goA: 0.1, goB: 0.5, refMargin: 3e-5, goMarg: 0.4},
		{name: "Go's logits not kept", refA: 0.5 + 3e-5, refB: 0.5, noGoLogits: true, nearTie: true, refMargin: 3e-5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := fixture.CopyDir(t, fixture.FamilyReferences("tiny-llama-mixtral"))
			set, err := references.Open(dir)
			require.NoError(t, err)
			c := set.Manifest.Cases[len(set.Manifest.Cases)-1]
			ids, ok := set.Find(c.ID, tensors.Experts, 1)
			require.True(t, ok)
			lt, ok := set.Find(c.ID, tensors.RouterLogits, 1)
			require.True(t, ok)
			K, E := ids.Shape[1], lt.Shape[1]
			want, err := set.Tensor(ids)
			require.NoError(t, err)
			tok, slot := 3, K-1
			a := int(want[tok*K+slot]) // the reference's choice
			b := 0                     // Go's: an expert the reference left out
			for slices.Contains(want[tok*K:(tok+1)*K], float32(b)) {
				b++
			}
			// The reference's logits of a and b as the case says.
			fixture.SetNPYElement(t, filepath.Join(dir, lt.File), tok*E+a, func(float32) float32 { return tc.refA })
			fixture.SetNPYElement(t, filepath.Join(dir, lt.File), tok*E+b, func(float32) float32 { return tc.refB })
			set, err = references.Open(dir)
			require.NoError(t, err)
			got := slices.Clone(want)
			got[tok*K+slot] = float32(b)
			var goLogits []float32
			if !tc.noGoLogits {
				goLogits = make([]float32, lt.Shape[0]*E)
				goLogits[tok*E+a], goLogits[tok*E+b] = tc.goA, tc.goB
			}
			res := compareData(ids, got, ids.Shape, want, nil, Options{})
			require.False(t, res.Passed)
			require.Zero(t, res.Atol, "expert ids compare exactly")
			require.NoError(t, explainRouting(set, ids, &res, got, goLogits))
			f := res.RoutingFlip
			require.NotNil(t, f)
			require.Equal(t, RoutingFlip{Token: tok, Slot: slot, Want: a, Got: b, RefMargin: f.RefMargin, GoMargin: f.GoMargin, NearTie: tc.nearTie}, *f)
			require.InDelta(t, tc.refMargin, f.RefMargin, 1e-6)
			if tc.noGoLogits {
				require.Nil(t, f.GoMargin)
				require.Contains(t, res.Message, "Go's router logits not kept")
			} else {
				require.InDelta(t, tc.goMarg, *f.GoMargin, 1e-6)
			}
			prefix := map[bool]string{true: "routing flip at token 3", false: "routing differs at token 3"}[tc.nearTie]
			require.True(t, strings.HasPrefix(res.Message, prefix), res.Message)
		})
	}
}

// TestBisectNamesRoutingFlip: a reference whose routing parts from Go's at
// one token is named at its experts tensor, the first tensor the routing
// changes, with the flip's report, not at the FFN outputs after it.
func TestBisectNamesRoutingFlip(t *testing.T) {
	dir := fixture.CopyDir(t, fixture.FamilyReferences("tiny-llama-qwen3moe"))
	set, err := references.Open(dir)
	require.NoError(t, err)
	c := set.Manifest.Cases[0]
	ids, ok := set.Find(c.ID, tensors.Experts, 0)
	require.True(t, ok)
	K := ids.Shape[1]
	want, err := set.Tensor(ids)
	require.NoError(t, err)
	tok := 1
	other := 0
	for slices.Contains(want[tok*K:(tok+1)*K], float32(other)) {
		other++
	}
	fixture.SetNPYElement(t, filepath.Join(dir, ids.File), tok*K, func(float32) float32 { return float32(other) })
	m, err := loader.LoadWith(fixture.FamilyModel("tiny-llama-qwen3moe"), loader.Options{AsStored: true})
	require.NoError(t, err)
	set, err = references.Open(dir)
	require.NoError(t, err)
	tk, err := tokenizer.Load(m.Dir)
	require.NoError(t, err)
	rep, err := Run(context.Background(), m, set, Options{Tokenizer: tk})
	require.NoError(t, err)
	f := rep.Bisect()
	require.NotNil(t, f)
	require.Equal(t, tensors.Experts, f.Name)
	require.Equal(t, 0, *f.Layer)
	require.Equal(t, c.ID, f.Case)
	require.Equal(t, 1, f.Mismatches)
	require.Contains(t, f.Message, "routing differs at token 1, slot 0")
}
