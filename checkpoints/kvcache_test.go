package checkpoints

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/kvcache"
	"github.com/llorch/llorch-check/loader"
	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/references"
	"github.com/llorch/llorch-check/tensors"
	"github.com/llorch/llorch-check/tokenizer"
)

// f16KVSets are the committed sets of the f16-kv profile and the models
// they were made from.
var f16KVSets = []struct{ model, set string }{
	{"tiny-gpt2", "tiny-gpt2-f16kv"},
	{"tiny-llama-qwen2", "tiny-llama-qwen2-f16kv"},
}

func openF16KV(t *testing.T, modelName, setName string) (*model.Model, *references.Set) {
	t.Helper()
	m, err := loader.LoadWith(fixture.FamilyModel(modelName), loader.Options{AsStored: true})
	require.NoError(t, err)
	set, err := references.Open(filepath.Join(fixture.Root(), "testdata", "references", setName))
	require.NoError(t, err)
	require.Equal(t, references.EmulationF16KV, set.Manifest.Emulates().Profile)
	return m, set
}

// TestCheckKVCache: a set of the f16-kv profile goes with the float16
// cache and only with it; other engines' sets stay refused either way.
func TestCheckKVCache(t *testing.T) {
	f16 := kvcache.Options{Float16: true}
	tests := []struct {
		name    string
		profile string // "" for a plain set
		kv      kvcache.Options
		wantErr []string // nil: accepted
	}{
		{"plain f32", "", kvcache.Options{}, nil},
		{"plain f16", "", f16, []string{"--kv-cache-dtype f16: ", " is a plain reference set", "fails by design", "--emulate f16-kv"}},
		{"f16-kv f16", references.EmulationF16KV, f16, nil},
		{"f16-kv f32", references.EmulationF16KV, kvcache.Options{}, []string{"applies f16-kv's approximations", "run with --kv-cache-dtype f16"}},
		{"llamacpp f32", "llamacpp-cpu", kvcache.Options{}, []string{"applies llamacpp-cpu's approximations", "not llorch-check's forward"}},
		{"llamacpp f16", "llamacpp-cpu-f16kv", f16, []string{"applies llamacpp-cpu-f16kv's approximations", "not llorch-check's forward"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			set := &references.Set{Dir: "/refs/x"}
			if tc.profile != "" {
				set.Manifest.Generator = map[string]any{"emulates": map[string]any{"profile": tc.profile, "applies": "something"}}
			}
			err := CheckKVCache(set, tc.kv)
			if tc.wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.Contains(t, err.Error(), "/refs/x", "the message names the set")
			for _, s := range tc.wantErr {
				require.Contains(t, err.Error(), s)
			}
		})
	}
}

// TestF16KVCacheHoldsTheProfilesValues: with a float16 cache, checkpoint
// 3's k_cache and v_cache are exactly Go's own k (after RoPE) and v of
// checkpoint 2 rounded to float16, nearest even, as the f16-kv profile
// rounds PyTorch's; so an element differs from the set's only where
// rounding turns float32 noise into a float16 step: by at most one step
// more than the unrounded values differ. In layer 0, whose inputs agree
// to float32 noise, Go's cache flips about as often as PyTorch float32's
// own against its float64 twin.
func TestF16KVCacheHoldsTheProfilesValues(t *testing.T) {
	for _, tc := range f16KVSets {
		t.Run(tc.set, func(t *testing.T) {
			m, set := openF16KV(t, tc.model, tc.set)
			unrounded := map[string]string{tensors.KCache: tensors.K, tensors.VCache: tensors.V}
			if tensors.FamilyOf(m.Config.ModelType) == tensors.Llama {
				unrounded[tensors.KCache] = tensors.KRope
			}
			for _, c := range set.Manifest.Cases {
				wanted := selectTensors(set, c.ID, Options{Checkpoints: Selection{2: true, 3: true}})
				spec := captureFor(wanted)
				spec.kv = kvcache.Options{Float16: true}
				got, err := capture(context.Background(), m, c.Tokens, spec)
				require.NoError(t, err)
				for l := range m.Config.NLayer {
					for _, name := range []string{tensors.KCache, tensors.VCache} {
						cached, ok := got.get(name, l)
						require.True(t, ok)
						goX, ok := got.get(unrounded[name], l)
						require.True(t, ok)
						want := setTensor(t, set, c.ID, name, l)
						torchX := setTensor(t, set, c.ID, unrounded[name], l)
						ti, _ := set.Find(c.ID, name, l)
						truth, err := set.TensorF64(ti)
						require.NoError(t, err)
						require.Equal(t, len(goX.Data), len(cached.Data))
						goFlips, torchFlips := 0, 0
						for i, w := range want {
							g := cached.Data[i]
							require.Equal(t, gguf.Float16To32(gguf.Float32To16(goX.Data[i])), g,
								"%s %s layer %d [%d]: not %s %g rounded to float16", c.ID, name, l, i, unrounded[name], goX.Data[i])
							if g != w {
								goFlips++
								step := float64(f16Step(max(abs32(g), abs32(w))))
								require.LessOrEqual(t, math.Abs(float64(g-w)), math.Abs(float64(goX.Data[i]-torchX[i]))+step,
									"%s %s layer %d [%d]: got %g, want %g", c.ID, name, l, i, g, w)
							}
							if float64(w) != truth[i] {
								torchFlips++
							}
						}
						if l == 0 {
							require.LessOrEqual(t, goFlips, 2*torchFlips+4, "%s %s layer 0: Go flips %d values, PyTorch float32 %d against its float64 twin", c.ID, name, goFlips, torchFlips)
						}
					}
				}
			}
		})
	}
}

func setTensor(t *testing.T, set *references.Set, caseID, name string, layer int) []float32 {
	t.Helper()
	ti, ok := set.Find(caseID, name, layer)
	require.True(t, ok, "%s %s layer %d", caseID, name, layer)
	data, err := set.Tensor(ti)
	require.NoError(t, err)
	return data
}

func abs32(x float32) float32 { return float32(math.Abs(float64(x))) }

// f16Step is the spacing of float16 values at the float16 value x.
func f16Step(x float32) float32 {
	h := gguf.Float32To16(x) & 0x7fff
	return gguf.Float16To32(h+1) - gguf.Float16To32(h)
}

// TestF16KVSetsNeedTheF16Cache: the f16-kv sets tell the two caches apart.
// The float32 cache first leaves them at checkpoint 4 (the scores of
// layer 0, which read the cache) and is over ten times further from their
// last logits than the float16 cache, which is closer at every checkpoint
// from 1 to 9. The float16 cache passes every checkpoint at the default
// tolerances: a value whose float32 k or v sits at a rounding midpoint
// flips by a float16 step, 1e-3 at |k| ≈ 2, in Go as in PyTorch float32
// against its own float64 twin (TestF16KVCacheHoldsTheProfilesValues), so
// checkpoint 3 lets such flips through (flipAllowed) and everything else
// is compared on the set's cache (kvforce.go); both sets have flips.
func TestF16KVSetsNeedTheF16Cache(t *testing.T) {
	for _, tc := range f16KVSets {
		t.Run(tc.set, func(t *testing.T) {
			m, set := openF16KV(t, tc.model, tc.set)
			tok, err := tokenizer.Load(m.Dir)
			require.NoError(t, err)
			ctx := context.Background()

			_, err = Run(ctx, m, set, Options{Tokenizer: tok})
			require.ErrorContains(t, err, "--kv-cache-dtype f16")
			f16, err := Run(ctx, m, set, Options{Tokenizer: tok, KVCache: kvcache.Options{Float16: true}})
			require.NoError(t, err)
			require.Equal(t, references.Float16, f16.KVCache)
			flips := 0
			for _, r := range f16.Results {
				require.Equal(t, StatusPassed, r.Status, "%s checkpoint %d %s layer %d: %s", r.Case, r.Checkpoint, r.Name, r.LayerIndex(), r.Message)
				flips += r.Flips
				if r.Flips > 0 {
					require.Contains(t, []string{tensors.KCache, tensors.VCache}, r.Name, "only the cache's own tensors have flips")
				}
			}
			require.True(t, f16.Passed)
			require.Positive(t, flips, "the sets have rounding flips: the rule that lets them through is exercised")

			// The same numbers without the profile's label, for the float32 cache.
			set.Manifest.Generator = nil
			f32, err := Run(ctx, m, set, Options{Tokenizer: tok})
			require.NoError(t, err)
			require.False(t, f32.Passed)
			first := f32.FirstFailure()
			require.NotNil(t, first)
			require.Equal(t, 4, first.Checkpoint, "%s %s", first.Case, first.Name)
			require.Equal(t, tensors.Scores, first.Name)
			require.Equal(t, 0, first.LayerIndex())

			worst := func(rep *Report, cp int) float64 {
				w := 0.0
				for _, r := range rep.Results {
					if r.Checkpoint == cp {
						w = math.Max(w, float64(r.MaxAbsErr))
					}
				}
				return w
			}
			for cp := 1; cp <= 9; cp++ {
				require.Less(t, worst(f16, cp), worst(f32, cp), "checkpoint %d", cp)
			}
			require.Less(t, 10*worst(f16, 9), worst(f32, 9), "checkpoint 9")
			for _, cp := range []int{10, 11, 12} {
				for _, r := range f16.Results {
					if r.Checkpoint == cp {
						require.Equal(t, StatusPassed, r.Status, "%s checkpoint %d %s", r.Case, cp, r.Name)
					}
				}
			}
		})
	}
}
