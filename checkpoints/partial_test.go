package checkpoints

import (
	"context"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/references"
)

// partialCopy copies the tiny set and keeps only the tensors keep accepts,
// declaring it a partial dump when partial is set. It returns the copy
// and, by checkpoint, the tensor names it dropped.
func partialCopy(t *testing.T, partial bool, keep func(map[string]any) bool) (string, map[int][]string) {
	t.Helper()
	dir := fixture.CopyDir(t, fixture.TinyReferences())
	dropped := map[int][]string{}
	fixture.EditJSON(t, filepath.Join(dir, "manifest.json"), func(m map[string]any) {
		var kept []any
		for _, x := range m["tensors"].([]any) {
			ti := x.(map[string]any)
			if keep(ti) {
				kept = append(kept, ti)
				continue
			}
			cp, name := int(ti["checkpoint"].(float64)), ti["name"].(string)
			if len(name) > len(references.SamplingPrefix) && name[:len(references.SamplingPrefix)] == references.SamplingPrefix {
				name = "sampling_*"
			}
			if !slices.Contains(dropped[cp], name) {
				dropped[cp] = append(dropped[cp], name)
			}
		}
		m["tensors"] = kept
		if partial {
			m["generator"].(map[string]any)["partial"] = true
			m["greedy"], m["generation"], m["loglikelihood"] = []any{}, nil, []any{}
			dropped[9] = append(dropped[9], "loglikelihood pairs")
			dropped[10] = append(dropped[10], "greedy")
			dropped[12] = append(dropped[12], "generation")
		}
	})
	return dir, dropped
}

func optionalOnly(ti map[string]any) bool { return !references.DumpOptional(ti["name"].(string)) }

// TestDiffPartialDump: a set that declares itself a partial dump is
// compared on what it holds and says what it left out; a required tensor
// it lacks fails, and a set that does not declare it fails on every
// tensor it lacks.
func TestDiffPartialDump(t *testing.T) {
	first := func(ti map[string]any) bool {
		return optionalOnly(ti) && !(ti["case"] == "hello" && ti["name"] == "gelu" && ti["layer"] == 0.0)
	}
	for _, tc := range []struct {
		name    string
		partial bool
		keep    func(map[string]any) bool
		passes  bool
		missing string // the first failure's tensor, "missing from"; "": one of those dropped
	}{
		{"partial", true, optionalOnly, true, ""},
		{"undeclared", false, optionalOnly, false, ""},
		{"partial without a required tensor", true, first, false, "gelu"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, err := references.Open(fixture.TinyReferences())
			require.NoError(t, err)
			dir, dropped := partialCopy(t, tc.partial, tc.keep)
			got, err := references.Open(dir)
			require.NoError(t, err)
			rep, err := Diff(context.Background(), base, got, Options{})
			require.NoError(t, err)
			require.Equal(t, tc.passes, rep.Passed, rep.Verdict())
			if tc.passes {
				for _, names := range rep.NotDumped {
					sort.Strings(names)
				}
				for _, names := range dropped {
					sort.Strings(names)
				}
				require.Equal(t, dropped, rep.NotDumped)
				require.Equal(t, "engine", rep.Engine)
				return
			}
			f := rep.FirstFailure()
			require.Contains(t, f.Message, "missing from")
			if tc.missing == "" {
				require.Contains(t, dropped[f.Checkpoint], f.Name)
				return
			}
			require.Equal(t, tc.missing, f.Name)
			require.Equal(t, "hello", f.Case)
		})
	}
}

// TestDiffNamesEmulation: a baseline made with an engine's approximations
// (dump_references.py --emulate) is named on the report's emulates line,
// and the failures table gives each tensor's float64 budget.
func TestDiffNamesEmulation(t *testing.T) {
	dir := fixture.CopyDir(t, fixture.TinyReferences())
	fixture.EditJSON(t, filepath.Join(dir, "manifest.json"), func(m map[string]any) {
		m["generator"].(map[string]any)["emulates"] = map[string]any{"profile": "llamacpp-cpu", "applies": "a float16 GELU table"}
	})
	want, err := references.Open(dir)
	require.NoError(t, err)
	got := fixture.CopyDir(t, fixture.TinyReferences())
	fixture.SetNPYElement(t, filepath.Join(got, "hello", "l00_gelu.npy"), 3, func(v float32) float32 { return v + 0.01 })
	gs, err := references.Open(got)
	require.NoError(t, err)
	rep, err := Diff(context.Background(), want, gs, Options{})
	require.NoError(t, err)
	require.Equal(t, &references.Emulation{Profile: "llamacpp-cpu", Applies: "a float16 GELU table"}, rep.Emulates)
	var b strings.Builder
	require.NoError(t, rep.WriteTable(&b))
	require.Contains(t, b.String(), "emulates:   llamacpp-cpu, applied by the reference: a float16 GELU table")
	require.Regexp(t, `│ hello │ 6 │ 0 +│ gelu +│ 1/512 +│ [0-9.e+-]+ +│ [0-9.]+x +│`, b.String())
}
