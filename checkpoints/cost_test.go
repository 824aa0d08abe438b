package checkpoints

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/loader"
	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/references"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCostFor(t *testing.T) {
	cases := []struct {
		model, ref string
		cost       bool
	}{
		{"F16", "F16", false},
		{"F32", "F16", false},
		{"F16+F32", "F16", false}, // an F16 GGUF of F16 weights: norms kept F32
		{"F32", "F32", false},
		{"F32", "BF16", false},
		{"F16", "F32", true},
		{"F16+F32", "F32", true},     // an F32 file with float16 matrices in memory
		{"F16+F32", "F16+F32", true}, // mixed: judged conservatively
		{"BF16", "F16", true},
		{"F32+Q8_0", "F16", true},
		{"F32+Q4_K+Q5_0+Q6_K+Q8_0", "F16", true},
	}
	for _, c := range cases {
		got := CostFor(c.model, c.ref)
		if !c.cost {
			assert.Nil(t, got, "%s vs %s", c.model, c.ref)
			continue
		}
		require.NotNil(t, got, "%s vs %s", c.model, c.ref)
		assert.Contains(t, got.Reason, c.model)
		assert.Contains(t, got.Reason, c.ref)
	}
}

// Tolerances are the defaults or an explicit override, never fitted to a
// format; in a cost report a failure becomes StatusCost.
func TestOptionsTolerance(t *testing.T) {
	cp1, _ := ByNumber(1)
	assert.Equal(t, cp1.Tolerance, Options{}.tolerance(cp1))
	c := CostFor("F32+Q8_0", "F16")
	assert.Equal(t, cp1.Tolerance, Options{Cost: c}.tolerance(cp1))
	o := Tolerance{Atol: 1, Rtol: 2}
	assert.Equal(t, o, Options{Cost: c, Overrides: map[int]Tolerance{1: o}}.tolerance(cp1))

	failed := Result{Checkpoint: 10, Status: StatusFailed, Message: "ids [1], the reference has [2]"}
	assert.Equal(t, StatusFailed, Options{}.informational(failed).Status)
	got := Options{Cost: c}.informational(failed)
	assert.Equal(t, StatusCost, got.Status)
	assert.Contains(t, got.Message, "cost of the weights' rounding")
}

// convertTiny writes the default tiny model as GGUF of type typ with the
// given source sha, and loads it back.
func convertTiny(t *testing.T, typ gguf.GGMLType, sourceSHA string) *model.Model {
	t.Helper()
	m, _ := openDefault(t)
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	_, err := loader.WriteGGUF(m, path, loader.GGUFFile{Type: typ, SourceSHA256: sourceSHA})
	require.NoError(t, err)
	g, err := loader.Load(path)
	require.NoError(t, err)
	return g
}

func TestGGUFCompatibility(t *testing.T) {
	_, set := openDefault(t)
	want := set.Manifest.Model.WeightsSHA256

	// No source sha: the file's own sha decides, and it differs.
	_, err := Run(context.Background(), convertTiny(t, gguf.GGMLTypeF32, ""), set, Options{})
	require.ErrorIs(t, err, references.ErrWeightsMismatch)

	// A source sha of other weights is refused, and the error says so.
	other := strings.Repeat("0", 64)
	_, err = Run(context.Background(), convertTiny(t, gguf.GGMLTypeF32, other), set, Options{})
	require.ErrorIs(t, err, references.ErrWeightsMismatch)
	assert.ErrorContains(t, err, "converted from weights with sha256 "+other)

	// The recorded source sha matches: accepted, and the report says how.
	sel, _ := ParseSelection("1-2")
	rep, err := Run(context.Background(), convertTiny(t, gguf.GGMLTypeF32, want), set, Options{Checkpoints: sel})
	require.NoError(t, err)
	assert.True(t, rep.Passed, rep.Verdict())
	assert.Nil(t, rep.Cost, "F32 from F16 is lossless")
	assert.Contains(t, rep.WeightsMatch, model.KeySourceSHA256)
	assert.True(t, strings.HasSuffix(rep.Model, "tiny.gguf"), rep.Model)
}

// Q8_0 against the references of its F16 source is a cost report: the
// default tolerances, results beyond them marked COST, the verdict saying
// it is not a validation, in every format.
func TestQ8CostReport(t *testing.T) {
	_, set := openDefault(t)
	m := convertTiny(t, gguf.GGMLTypeQ8_0, set.Manifest.Model.WeightsSHA256)
	sel, _ := ParseSelection("2,7,10")
	rep, err := Run(context.Background(), m, set, Options{Checkpoints: sel})
	require.NoError(t, err)
	require.NotNil(t, rep.Cost)
	assert.Positive(t, rep.count(StatusCost), "Q8_0 drift is beyond the default tolerances")
	assert.Zero(t, rep.count(StatusFailed))
	assert.True(t, strings.HasPrefix(rep.Verdict(), "COST REPORT (not a validation): "), rep.Verdict())
	for _, r := range rep.Results {
		if r.Checkpoint == 2 {
			assert.Equal(t, Tolerance{1e-4, 1e-4}, Tolerance{r.Atol, r.Rtol}, "the default tolerances")
		}
	}

	var table bytes.Buffer
	require.NoError(t, rep.WriteTable(&table))
	assert.Contains(t, table.String(), "cost:       a COST REPORT, not a validation: model weights stored as F32+Q8_0, the reference set's as F16.")
	var doc struct {
		Cost *Cost `json:"cost"`
	}
	var js bytes.Buffer
	require.NoError(t, rep.WriteJSON(&js))
	require.NoError(t, json.Unmarshal(js.Bytes(), &doc))
	require.NotNil(t, doc.Cost)
}

func TestSummaryCost(t *testing.T) {
	rep := &Report{Cost: &Cost{Reason: "r"}, Passed: true, Results: []Result{
		{Checkpoint: 12, Status: StatusPassed}, {Checkpoint: 12, Status: StatusCost},
	}}
	s := rep.Summaries()
	require.Len(t, s, 1)
	assert.Equal(t, StatusCost, s[0].Status)
	assert.Equal(t, 1, s[0].Cost)
	assert.Contains(t, rep.Verdict(), "1 checks within the default tolerances, 1 beyond them by the weights' rounding")
}
