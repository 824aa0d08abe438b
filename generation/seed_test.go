package generation_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/generation"
	"github.com/llorch/llorch-check/internal/fixture/tiny"
	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/sampling"
)

// The tiny model's random weights give a nearly flat distribution over
// 50257 tokens, so a seeded sample is a sharp fingerprint of the sampler.
var sampled = sampling.Params{Temperature: 0.9, TopK: 0, TopP: 0.95, MinP: 0, RepetitionPenalty: 1.1}

func sampleTiny(t *testing.T, m *model.Model, seed *uint64) generation.Result {
	t.Helper()
	prompt := []int{15496, 13} // "Hello."
	res, err := generation.Generate(context.Background(), generation.NewModelDecoder(m), nil,
		generation.Request{Prompt: prompt, MaxTokens: 6, Params: sampled, Seed: seed}, nil)
	require.NoError(t, err)
	require.Len(t, res.Tokens, 6)
	return res
}

func TestSeedDeterminism(t *testing.T) {
	m, _, _ := tiny.Load(t)
	seed := uint64(1234)
	a, b := sampleTiny(t, m, &seed), sampleTiny(t, m, &seed)
	require.Equal(t, a.Tokens, b.Tokens, "same seed, same tokens")
	require.Equal(t, seed, a.Seed)

	other := uint64(1235)
	require.NotEqual(t, a.Tokens, sampleTiny(t, m, &other).Tokens, "another seed, other tokens")

	drawn := sampleTiny(t, m, nil)
	replay := drawn.Seed
	require.Equal(t, drawn.Tokens, sampleTiny(t, m, &replay).Tokens, "the reported seed replays the generation")
}

// seedChildEnv makes this test binary act as a second process that prints
// the tokens of a seeded generation (TestSeedAcrossProcesses).
const seedChildEnv = "LLORCH_GENERATION_SEED_CHILD"

func TestSeedAcrossProcesses(t *testing.T) {
	if v := os.Getenv(seedChildEnv); v != "" {
		seed, err := strconv.ParseUint(v, 10, 64)
		require.NoError(t, err)
		m, _, _ := tiny.Load(t)
		require.NoError(t, json.NewEncoder(os.Stdout).Encode(sampleTiny(t, m, &seed).Tokens))
		return
	}
	if testing.Short() {
		t.Skip("starts a subprocess")
	}
	seed := uint64(987654321)
	cmd := exec.Command(os.Args[0], "-test.run=^TestSeedAcrossProcesses$", "-test.count=1")
	cmd.Env = append(os.Environ(), seedChildEnv+"="+strconv.FormatUint(seed, 10))
	out, err := cmd.Output()
	require.NoError(t, err, "child: %s", out)
	var child []int
	dec := json.NewDecoder(bytesReader(out))
	require.NoError(t, dec.Decode(&child), "child output: %s", out)

	m, _, _ := tiny.Load(t)
	require.Equal(t, sampleTiny(t, m, &seed).Tokens, child)
}

// TestSeededIsTheOneDraw: Seeded keeps a caller's seed, draws one when there
// is none, and Generate uses (and reports) the seed a Seeded request holds.
func TestSeededIsTheOneDraw(t *testing.T) {
	own := uint64(7)
	require.Same(t, &own, generation.Request{Seed: &own}.Seeded().Seed)
	req := generation.Request{Prompt: []int{1}, MaxTokens: 2, Params: sampled}.Seeded()
	require.NotNil(t, req.Seed)
	res, err := generation.Generate(context.Background(), &script{next: []int{3, 4}}, nil, req, nil)
	require.NoError(t, err)
	require.Equal(t, *req.Seed, res.Seed)
}
