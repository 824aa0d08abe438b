package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/checkpoints"
	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/references"
)

// foreignDump writes a partial dump as another engine would (FORMAT.md,
// "Dumps from other engines"): the tiny set's required tensors, no float64
// twins, no exact results, declared partial.
func foreignDump(t *testing.T) string {
	t.Helper()
	dir := fixture.CopyDir(t, fixture.TinyReferences())
	fixture.EditJSON(t, filepath.Join(dir, references.ManifestFile), func(m map[string]any) {
		var kept []any
		for _, x := range m["tensors"].([]any) {
			ti := x.(map[string]any)
			if !references.DumpOptional(ti["name"].(string)) {
				ti["file_f64"] = nil
				kept = append(kept, ti)
			}
		}
		m["tensors"] = kept
		m["generator"] = map[string]any{"partial": true, "engine": "test"}
		m["greedy"], m["generation"], m["loglikelihood"] = []any{}, nil, []any{}
	})
	return dir
}

// TestBisectDump: bisect --dump walks another engine's partial dump in
// forward order and names the first tensor outside tolerance, not the
// largest error: a small error planted in gelu of layer 1 comes before a
// large one in that block's output.
func TestBisectDump(t *testing.T) {
	dump := foreignDump(t)
	code, out, stderr := runCLI(t, "bisect", "--dump", dump, "--references", fixture.TinyReferences())
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, out, "no failure: PASS")
	require.Contains(t, out, "a partial dump")

	fixture.SetNPYElement(t, filepath.Join(dump, "story", "l01_block_out.npy"), 3, func(v float32) float32 { return v + 1 })
	fixture.SetNPYElement(t, filepath.Join(dump, "story", "l01_gelu.npy"), 5*256+7, func(v float32) float32 { return v + 0.01 })
	code, out, stderr = runCLI(t, "bisect", "--format", "json", "--dump", dump, "--references", fixture.TinyReferences())
	require.Equal(t, exitFailed, code, stderr)
	var doc struct {
		First *checkpoints.Failure `json:"first_failure"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	require.NotNil(t, doc.First)
	require.Equal(t, "gelu", doc.First.Name)
	require.Equal(t, "story", doc.First.Case)
	require.Equal(t, 1, *doc.First.Layer)
	require.Equal(t, []int{5, 7}, doc.First.Index, "token 5, channel 7")
	require.Equal(t, 1, doc.First.Mismatches)

	code, out, _ = runCLI(t, "bisect", "--dump", dump, "--references", fixture.TinyReferences())
	require.Equal(t, exitFailed, code)
	require.Contains(t, out, "first failure: checkpoint 6 (FFN), layer 1, tensor gelu, case story")

	// Go's forward is not run, so its flags are refused rather than ignored.
	code, _, stderr = runCLI(t, "bisect", "--dump", dump, "--inject-fault", "erf-gelu")
	require.Equal(t, exitBadInput, code)
	require.Contains(t, stderr, "--inject-fault configures Go's forward")
}
