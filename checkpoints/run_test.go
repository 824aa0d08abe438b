package checkpoints

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/loader"
	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/references"
	"github.com/llorch/llorch-check/tokenizer"
	"github.com/stretchr/testify/require"
)

func openDefault(t *testing.T) (*model.Model, *references.Set) {
	t.Helper()
	m, err := loader.Load(fixture.TinyModel())
	require.NoError(t, err)
	set, err := references.Open(fixture.TinyReferences())
	require.NoError(t, err)
	return m, set
}

func TestDefaultSetPassesAllTwelve(t *testing.T) {
	m, set := openDefault(t)
	tok, err := tokenizer.Load(m.Dir)
	require.NoError(t, err)
	rep, err := Run(context.Background(), m, set, Options{Tokenizer: tok})
	require.NoError(t, err)
	for _, f := range rep.Failures() {
		t.Errorf("%s cp%d layer %s %s: %s", f.Case, f.Checkpoint, layerString(f.Layer), f.Name, f.failureLine())
	}
	require.True(t, rep.Passed, rep.Verdict())

	// Every implemented checkpoint was compared on every case, every layer.
	seen := map[string]map[int]bool{}
	for _, r := range rep.Results {
		if r.Status == StatusNotImplemented {
			continue
		}
		if seen[r.Case] == nil {
			seen[r.Case] = map[int]bool{}
		}
		seen[r.Case][r.Checkpoint] = true
		if r.Checkpoint != 10 && r.Checkpoint != 12 {
			require.NotNil(t, r.BudgetRatio, "%s %s: the committed set has float64 twins", r.Case, r.Name)
		}
	}
	for id, cps := range seen {
		if strings.HasPrefix(id, "loglikelihood[") {
			continue
		}
		for n := 1; n <= 12; n++ {
			require.True(t, cps[n], "case %s has no checkpoint %d results", id, n)
		}
	}
	require.Empty(t, rep.NotImplemented)
	require.Len(t, seen, len(set.Manifest.Cases)+len(set.Manifest.Loglikelihood))
}

func TestBisectNamesInjectedFault(t *testing.T) {
	tests := []struct {
		fault      model.Fault
		layer      int
		checkpoint int
		name       string
		wantLayer  int
	}{
		{model.FaultErfGELU, 1, 6, "gelu", 1},
		{model.FaultTransposedProj, 1, 5, "attn_out", 1},
		{model.FaultNoCausalMask, 0, 4, "probs", 0},
		{model.FaultAttnScale, 1, 4, "scores", 1},
		{model.FaultLayerNormEps, -1, 1, "ln_1", 0},
		// Without the attention residual, attn_out itself is right; the
		// first tensor that sees the dropped residual is ln_2.
		{model.FaultNoResidual, 1, 1, "ln_2", 1},
	}
	for _, tc := range tests {
		t.Run(tc.fault.String(), func(t *testing.T) {
			m, set := openDefault(t)
			requireBisect(t, m, set, tc.fault, tc.layer, tc.checkpoint, tc.name, tc.wantLayer)
		})
	}
}

// requireBisect injects fault at layer and requires bisect's first
// failure to be tensor name of checkpoint at wantLayer.
func requireBisect(t *testing.T, m *model.Model, set *references.Set, fault model.Fault, layer, checkpoint int, name string, wantLayer int) {
	t.Helper()
	m.InjectFault(fault, layer)
	rep, err := Run(context.Background(), m, set, Options{Checkpoints: Selection{1: true, 2: true, 4: true, 5: true, 6: true, 7: true, 8: true, 9: true}})
	require.NoError(t, err)
	f := rep.Bisect()
	require.NotNil(t, f, "the fault went unnoticed")
	require.Equal(t, checkpoint, f.Checkpoint, "first failure: %+v", f)
	require.Equal(t, name, f.Name)
	require.NotNil(t, f.Layer)
	require.Equal(t, wantLayer, *f.Layer)
	require.False(t, rep.Passed)
}

func TestBisectLocatesTamperedElement(t *testing.T) {
	dir := fixture.CopyDir(t, fixture.TinyReferences())
	set, err := references.Open(dir)
	require.NoError(t, err)
	c := set.Manifest.Cases[len(set.Manifest.Cases)-1]
	ti, ok := set.Find(c.ID, "attn_out", 1)
	require.True(t, ok)
	pos, ch := len(c.Tokens)/2, 7
	flat := pos*ti.Shape[1] + ch
	fixture.SetNPYElement(t, filepath.Join(dir, ti.File), flat, func(v float32) float32 { return v + 0.01 })

	m, err := loader.Load(fixture.TinyModel())
	require.NoError(t, err)
	set, err = references.Open(dir)
	require.NoError(t, err)
	tok, err := tokenizer.Load(m.Dir)
	require.NoError(t, err)
	rep, err := Run(context.Background(), m, set, Options{Tokenizer: tok})
	require.NoError(t, err)
	f := rep.Bisect()
	require.NotNil(t, f)
	require.Equal(t, 5, f.Checkpoint)
	require.Equal(t, "attn_out", f.Name)
	require.Equal(t, 1, *f.Layer)
	require.Equal(t, c.ID, f.Case)
	require.Equal(t, []int{pos, ch}, f.Index)
	require.Equal(t, []string{"token", "channel"}, f.Axes)
	require.Equal(t, 1, f.Mismatches, "only the tampered element differs")
	require.Len(t, rep.Failures(), 1)
}

// TestCacheMatchesFullForwardEveryStep decodes 32 tokens one at a time and
// checks each step's logits against a fresh full forward (checkpoint 3).
func TestCacheMatchesFullForwardEveryStep(t *testing.T) {
	m, set := openDefault(t)
	ctx := context.Background()
	tokens := append([]int(nil), set.Manifest.Cases[0].Tokens...)
	cache := m.NewCache()
	logits, err := m.Forward(ctx, cache, tokens, model.ForwardOptions{})
	require.NoError(t, err)
	tol, _ := ByNumber(3)
	for step := 0; step < 32; step++ {
		next := argmax(logits)
		tokens = append(tokens, next)
		logits, err = m.Forward(ctx, cache, []int{next}, model.ForwardOptions{})
		require.NoError(t, err)
		full, err := m.Forward(ctx, m.NewCache(), tokens, model.ForwardOptions{})
		require.NoError(t, err)
		s := compare(logits, full, nil, tol.Tolerance, nil)
		require.Zero(t, s.Mismatches, "step %d: max abs err %g", step, s.MaxAbsErr)
		require.Equal(t, len(tokens), cache.Len())
	}
}

func argmax(v []float32) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

// TestExactCheckpointsCatchTampering changes one expected value of
// checkpoints 9 (log-likelihood), 10, 11 and 12 and expects that exact
// result, and only it, to fail.
func TestExactCheckpointsCatchTampering(t *testing.T) {
	tests := []struct {
		name       string
		checkpoint int
		tamper     func(t *testing.T, dir string, m map[string]any)
		wantName   string
		wantCase   string
	}{
		{"greedy token", 10, func(t *testing.T, _ string, m map[string]any) {
			g := m["greedy"].([]any)[1].(map[string]any)
			g["token"] = g["token"].(float64) + 1
		}, "greedy", "story"},
		{"generated token", 12, func(t *testing.T, _ string, m map[string]any) {
			r := m["generation"].(map[string]any)["results"].([]any)[2].(map[string]any)
			toks := r["tokens"].([]any)
			toks[5] = toks[5].(float64) + 1
		}, "generation", "long"},
		{"generated text", 12, func(t *testing.T, _ string, m map[string]any) {
			r := m["generation"].(map[string]any)["results"].([]any)[0].(map[string]any)
			r["text"] = r["text"].(string) + "!"
		}, "generation", "hello"},
		{"log-likelihood", 9, func(t *testing.T, _ string, m map[string]any) {
			ll := m["loglikelihood"].([]any)[3].(map[string]any)
			ll["ll"] = ll["ll"].(float64) + 2e-4
		}, "loglikelihood", "loglikelihood[3]"},
		{"sampling probability", 11, func(t *testing.T, dir string, _ map[string]any) {
			fixture.SetNPYElement(t, filepath.Join(dir, "story", "sampling_top_p.npy"), 42, func(v float32) float32 { return v + 3e-6 })
		}, "sampling_top_p", "story"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := fixture.CopyDir(t, fixture.TinyReferences())
			fixture.EditJSON(t, filepath.Join(dir, "manifest.json"), func(m map[string]any) { tc.tamper(t, dir, m) })
			m, err := loader.Load(fixture.TinyModel())
			require.NoError(t, err)
			tok, err := tokenizer.Load(m.Dir)
			require.NoError(t, err)
			set, err := references.Open(dir)
			require.NoError(t, err)
			rep, err := Run(context.Background(), m, set, Options{Checkpoints: Selection{tc.checkpoint: true}, Tokenizer: tok})
			require.NoError(t, err)
			fails := rep.Failures()
			require.Len(t, fails, 1, rep.Verdict())
			require.Equal(t, tc.wantName, fails[0].Name)
			require.Equal(t, tc.wantCase, fails[0].Case)
		})
	}
}

// A set made with float16 matrices (dump --weight-dtype f16) is the
// reference of a model holding them so, at the default tolerances; a
// float32-held model is refused. The tiny model is an F16 file, so its
// committed set, marked, is such a set.
func TestFloat16ReferenceSet(t *testing.T) {
	dir := fixture.CopyDir(t, fixture.TinyReferences())
	fixture.EditJSON(t, filepath.Join(dir, "manifest.json"), func(m map[string]any) {
		m["model"].(map[string]any)["matrices_held_as"] = "float16"
	})
	set, err := references.Open(dir)
	require.NoError(t, err)
	sel := Options{Checkpoints: Selection{7: true, 9: true}}
	for _, f16 := range []bool{false, true} {
		m, err := loader.LoadWith(fixture.TinyModel(), loader.Options{Float16: f16})
		require.NoError(t, err)
		rep, err := Run(context.Background(), m, set, sel)
		if !f16 {
			require.ErrorIs(t, err, references.ErrWeightsMismatch)
			require.ErrorContains(t, err, "--weight-dtype f16")
			continue
		}
		require.NoError(t, err)
		require.True(t, rep.Passed, rep.Verdict())
		require.Nil(t, rep.Cost)
		require.Equal(t, references.Float16, rep.HeldAs)
	}
}

// TestRunRefusesEmulatedSet: a set computed with another engine's
// approximations would fail Go's own forward for reasons that are not
// Go's; run, bisect and serve's start-up check refuse it as bad input.
func TestRunRefusesEmulatedSet(t *testing.T) {
	m, set := openDefault(t)
	set.Manifest.Generator = map[string]any{"emulates": map[string]any{"profile": "llamacpp-cpu", "applies": "ggml's float16 GELU table"}}
	_, err := Run(context.Background(), m, set, Options{})
	require.ErrorContains(t, err, "applies llamacpp-cpu's approximations (ggml's float16 GELU table)")
}
