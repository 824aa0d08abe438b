package checkpoints

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/references"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestProfileFor(t *testing.T) {
	cases := []struct {
		model, ref, want string // want "" for no profile
	}{
		{"F16", "F16", ""},
		{"F32", "F16", ""},
		{"F16+F32", "F16", ""}, // an F16 GGUF of F16 weights: norms kept F32
		{"F32", "F32", ""},
		{"F32", "BF16", ""},
		{"F16", "F32", "f16"},
		{"F16+F32", "F32", "f16"},     // an F32 file with float16 matrices in memory
		{"F16+F32", "F16+F32", "f16"}, // mixed: judged conservatively
		{"BF16", "F16", "bf16"},
		{"F32+Q8_0", "F16", "q8_0"},
		{"F16+F32+Q8_0", "F32", "q8_0"},        // the coarsest lossy type decides
		{"F32+Q4_K+Q5_0+Q6_K+Q8_0", "F16", ""}, // llama.cpp's Q4_K_M: no profile was measured for it
		{"Q4_0", "F32", ""},
	}
	for _, c := range cases {
		p := ProfileFor(c.model, c.ref)
		if c.want == "" {
			assert.Nil(t, p, "%s vs %s", c.model, c.ref)
			continue
		}
		require.NotNil(t, p, "%s vs %s", c.model, c.ref)
		assert.Equal(t, c.want, p.Name)
		assert.Contains(t, p.Reason, c.model)
		assert.True(t, p.ExactInformational)
		for n := 1; n <= 9; n++ {
			cp, _ := ByNumber(n)
			tol := p.Tolerances[n]
			assert.True(t, tol.Atol >= cp.Tolerance.Atol && tol.Rtol >= cp.Tolerance.Rtol, "%s checkpoint %d: a profile only widens", c.want, n)
		}
	}
}

// Tolerance precedence: an explicit override, then the profile, then the
// default.
func TestOptionsTolerance(t *testing.T) {
	cp1, _ := ByNumber(1)
	p := ProfileFor("F32+Q8_0", "F16")
	assert.Equal(t, cp1.Tolerance, Options{}.tolerance(cp1))
	assert.Equal(t, p.Tolerances[1], Options{Profile: p}.tolerance(cp1))
	o := Tolerance{Atol: 1, Rtol: 2}
	assert.Equal(t, o, Options{Profile: p, Overrides: map[int]Tolerance{1: o}}.tolerance(cp1))

	failed := Result{Checkpoint: 10, Status: StatusFailed, Message: "ids [1], the reference has [2]"}
	assert.Equal(t, StatusFailed, Options{}.informational(failed).Status)
	got := Options{Profile: p}.informational(failed)
	assert.Equal(t, StatusDiffers, got.Status)
	assert.Contains(t, got.Message, "informational under the q8_0 profile")
}

// convertTiny writes the default tiny model as GGUF of type typ with the
// given source sha, and loads it back.
func convertTiny(t *testing.T, typ gguf.GGMLType, sourceSHA string) *model.Model {
	t.Helper()
	m, _ := openDefault(t)
	kv, ts, err := m.GGUF(typ)
	require.NoError(t, err)
	if sourceSHA != "" {
		kv = append(kv, gguf.KV{Key: model.KeySourceSHA256, Value: gguf.Value{Type: gguf.TypeString, V: sourceSHA}})
	}
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	require.NoError(t, gguf.WriteFile(path, kv, ts))
	g, err := model.Load(path)
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
	assert.Nil(t, rep.Profile, "F32 from F16 is lossless")
	assert.Contains(t, rep.WeightsMatch, model.KeySourceSHA256)
	assert.True(t, strings.HasSuffix(rep.Model, "tiny.gguf"), rep.Model)
}

// Q8_0 fails the default tolerances and passes its profile, which the
// report prints and exports.
func TestQ8ProfileApplied(t *testing.T) {
	_, set := openDefault(t)
	m := convertTiny(t, gguf.GGMLTypeQ8_0, set.Manifest.Model.WeightsSHA256)
	sel, _ := ParseSelection("2,7,10")
	// A profile without tolerances compares at the defaults.
	rep, err := Run(context.Background(), m, set, Options{Checkpoints: sel, Profile: &Profile{Name: "none"}})
	require.NoError(t, err)
	assert.False(t, rep.Passed, "Q8_0 drift is far outside the default tolerances")

	rep, err = Run(context.Background(), m, set, Options{Checkpoints: sel})
	require.NoError(t, err)
	require.NotNil(t, rep.Profile)
	assert.Equal(t, "q8_0", rep.Profile.Name)
	assert.True(t, rep.Passed, rep.Verdict())

	var table bytes.Buffer
	require.NoError(t, rep.WriteTable(&table))
	assert.Contains(t, table.String(), "profile:    q8_0 (model weights stored as F32+Q8_0, the reference set's as F16)")
	assert.Contains(t, table.String(), "profile:    checkpoint 2 tolerance atol 0.35, rtol 0.05")
	var doc struct {
		Profile *Profile `json:"profile"`
	}
	var js bytes.Buffer
	require.NoError(t, rep.WriteJSON(&js))
	require.NoError(t, json.Unmarshal(js.Bytes(), &doc))
	require.NotNil(t, doc.Profile)
	assert.Equal(t, rep.Profile.Tolerances[7], doc.Profile.Tolerances[7])
}

func TestSummaryDiffers(t *testing.T) {
	rep := &Report{Profile: &Profile{Name: "q8_0"}, Results: []Result{
		{Checkpoint: 12, Status: StatusPassed}, {Checkpoint: 12, Status: StatusDiffers},
	}}
	s := rep.Summaries()
	require.Len(t, s, 1)
	assert.Equal(t, StatusDiffers, s[0].Status)
	assert.Equal(t, 1, s[0].Differs)
	assert.Contains(t, rep.Verdict(), "1 exact ids differ (informational under the q8_0 profile)")
}
