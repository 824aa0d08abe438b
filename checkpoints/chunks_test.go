package checkpoints

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/references"
	"github.com/stretchr/testify/require"
)

// TestChunkedComparisonIsTheWholeOne: a reference read a chunk at a time,
// and Go's scores and probabilities emitted a head (probe values 1) or a
// few heads (10000: two or more) at a time and compared as they come, give every result
// the whole tensors give, to the bit (statistics, worst element,
// verdict), on passing runs, on windowed attention's masked scores and on
// a failing one.
func TestChunkedComparisonIsTheWholeOne(t *testing.T) {
	tests := []struct {
		model string
		fault model.Fault
		layer int
	}{
		{"tiny-llama", model.FaultNone, 0},
		{"tiny-llama-mistral", model.FaultNone, 0}, // a window: masked scores past it
		{"tiny-llama-gemma2", model.FaultNone, 0},  // soft-capped scores, alternating windows
		{"tiny-llama-qwen3moe", model.FaultNone, 0},
		{"tiny-llama-mistral", model.FaultWindowOffByOne, 1},
		{"tiny-llama-gemma2", model.FaultNoSoftcap, 1},
	}
	run := func(t *testing.T, name string, fault model.Fault, layer, chunk, parts int) *Report {
		t.Helper()
		defer func(old, oldParts int) { chunkValues, probeValues = old, oldParts }(chunkValues, probeValues)
		chunkValues, probeValues = chunk, parts
		m, set := openFamily(t, name)
		if fault != model.FaultNone {
			m.InjectFault(fault, layer)
		}
		rep, err := Run(context.Background(), m, set, Options{})
		require.NoError(t, err)
		return rep
	}
	for _, tc := range tests {
		t.Run(tc.model+"/"+tc.fault.String(), func(t *testing.T) {
			whole := run(t, tc.model, tc.fault, tc.layer, 1<<40, 0)
			for _, c := range []struct{ chunk, parts int }{{1, 0}, {7, 0}, {1000, 0}, {1 << 40, 1}, {7, 1}, {1000, 10000}} {
				got := run(t, tc.model, tc.fault, tc.layer, c.chunk, c.parts)
				require.Equal(t, whole.Passed, got.Passed, "chunk %d, probe values %d", c.chunk, c.parts)
				require.Equal(t, whole.Results, got.Results, "chunk %d, probe values %d", c.chunk, c.parts)
			}
			require.Equal(t, tc.fault == model.FaultNone, whole.Passed)
		})
	}
}

// TestChunkedReadNamesTheBadFile: a reference read in chunks is checked as a
// whole one is: a value that is not finite, or a file shorter than its
// header says, is an error naming the file.
func TestChunkedReadNamesTheBadFile(t *testing.T) {
	defer func(old int) { chunkValues = old }(chunkValues)
	chunkValues = 7
	for _, tc := range []struct {
		name   string
		spoil  func(t *testing.T, path string)
		substr string
	}{
		{"NaN", func(t *testing.T, path string) {
			fixture.SetNPYElement(t, path, 30, func(float32) float32 { return float32(math.NaN()) })
		}, "references must be finite"},
		{"truncated", func(t *testing.T, path string) {
			fi, err := os.Stat(path)
			require.NoError(t, err)
			require.NoError(t, os.Truncate(path, fi.Size()-8))
		}, "truncated or corrupt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := fixture.CopyDir(t, fixture.FamilyReferences("tiny-llama"))
			set, err := references.Open(dir)
			require.NoError(t, err)
			c := set.Manifest.Cases[len(set.Manifest.Cases)-1]
			ti, ok := set.Find(c.ID, "attn_out", 1)
			require.True(t, ok)
			path := filepath.Join(dir, ti.File)
			tc.spoil(t, path)
			m, _ := openFamily(t, "tiny-llama")
			set, err = references.Open(dir)
			require.NoError(t, err)
			_, err = Run(context.Background(), m, set, Options{})
			require.ErrorContains(t, err, tc.substr)
			require.ErrorContains(t, err, path)
		})
	}
}
