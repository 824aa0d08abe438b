package probe

import (
	"bytes"
	"context"
	"flag"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/checkpoints"
	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/internal/httprecord"
	"github.com/llorch/llorch-check/references"
	"github.com/llorch/llorch-check/tokenizer"
)

var update = flag.Bool("update", false, "rewrite the golden reports of the recorded engines")

// recording is a real engine's answers to a probe, recorded by probe
// --record against a server run by hand (docs/probe.md, "Recording a
// server"): CI cannot build llama.cpp's server or Ollama, so their
// answers, byte for byte, are what the probe is tested against.
type recording struct {
	name  string // testdata/probe/NAME.jsonl.gz and NAME.report.json
	api   string // what detection must find
	model string // --model-name
	// family, when set, is the Llama-family tiny model served (its set,
	// its tokenizer, no corpus); else the default GPT-2 with its corpus.
	family string
}

var recordings = []recording{
	{name: "llama-server-b4748-f32", api: "llamacpp"},
	{name: "llama-server-b4748-q8_0", api: "llamacpp"},
	{name: "ollama-0.17.4-f32", api: "ollama", model: "tiny-f32"},
	{name: "ollama-0.17.4-q8_0", api: "ollama", model: "tiny-q8_0"},
}

func corpusDir() string {
	return filepath.Join(fixture.Root(), "testdata", "references", "tiny-gpt2-corpus")
}

// replay probes a recording as the recorded run did; every request the
// probe sends must have been recorded.
func replay(t *testing.T, r recording) *checkpoints.Report {
	t.Helper()
	ex, err := httprecord.Read(filepath.Join(fixture.Root(), "testdata", "probe", r.name+".jsonl.gz"))
	require.NoError(t, err)
	player := httprecord.NewPlayer(ex)
	ts := httptest.NewServer(player)
	defer ts.Close()
	dir, set, corpus := fixture.TinyModel(), tinySet(t), corpusDir()
	if r.family != "" {
		dir, corpus = fixture.FamilyModel(r.family), ""
		set, err = references.Open(fixture.FamilyReferences(r.family))
		require.NoError(t, err)
	}
	tok, err := tokenizer.Load(dir)
	require.NoError(t, err)
	rep, err := Run(context.Background(), set, Options{Endpoint: ts.URL, Model: r.model, Tokenizer: tok, Corpus: corpus})
	require.NoError(t, err, "an engine's API limits are reported, never an error")
	require.Empty(t, player.Misses(), "the probe asked what the engine was never asked")
	return rep
}

// requireGolden compares a report with its recording's golden JSON
// (written with -update), the endpoint and checkout path normalised.
func requireGolden(t *testing.T, r recording, rep *checkpoints.Report) {
	t.Helper()
	var got bytes.Buffer
	require.NoError(t, rep.WriteJSON(&got))
	norm := strings.ReplaceAll(got.String(), fixture.Root(), "$ROOT")
	norm = strings.ReplaceAll(norm, rep.Model, "$ENDPOINT")
	golden := filepath.Join(fixture.Root(), "testdata", "probe", r.name+".report.json")
	if *update {
		require.NoError(t, os.WriteFile(golden, []byte(norm), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	require.Equal(t, string(want), norm)
}

// TestRecordedEngines: llama.cpp's llama-server and Ollama, F32 and Q8_0,
// as they answered: detected, checkpoints 9, 11 and 12 checked, every
// invariance check reported, the corpus verdict given; the report is the
// one the live run printed (golden), and a lossy file costs more than F32.
func TestRecordedEngines(t *testing.T) {
	kl := map[string]float64{}
	for _, r := range recordings {
		t.Run(r.name, func(t *testing.T) {
			rep := replay(t, r)
			require.Equal(t, r.api, rep.API.Name)
			require.Contains(t, rep.API.Chosen, "detected: GET ")
			for _, cp := range []int{9, 11, 12} {
				require.Contains(t, checkpointsOf(rep), cp, "checkpoint %d is checked", cp)
			}
			require.Len(t, rep.Invariance, len(invarianceNames))
			for _, inv := range rep.Invariance {
				require.NotEqual(t, checkpoints.StatusNotExposed, inv.Status, "%s: %s", inv.Name, inv.Detail)
			}
			c := rep.Corpus
			require.NotNil(t, c)
			require.Equal(t, 1701, c.Positions+c.Skipped, "every position asked, or skipped with why")
			require.Greater(t, float64(c.Engine.KL.Mean), float64(c.Engine.KL.Sigma), "a cost with error bars smaller than itself")
			kl[r.name] = float64(c.Engine.KL.Mean)
			requireGolden(t, r, rep)
		})
	}
	for _, engine := range []string{"llama-server-b4748", "ollama-0.17.4"} {
		require.Greater(t, kl[engine+"-q8_0"], kl[engine+"-f32"], "%s: Q8_0 weights cost more than F32", engine)
	}
}

// TestRecordedFamilyEngines: llama.cpp's llama-server on the GGUF files
// convert writes for the tiny Llama (q/k permuted) and Qwen2 (biases)
// models, F32 weights. Its prompt tokenization and greedy generations
// agree with the reference (the BOS a prompt starts with is the
// prompt's, not /tokenize's; a SentencePiece continuation keeps its
// leading space); with an F32 KV cache every checkpoint passes, with its
// default F16 cache checkpoints 9 and 11 fail by the cache's rounding;
// byte tokens missing from its completion_probabilities are a reported
// limit, not an error.
func TestRecordedFamilyEngines(t *testing.T) {
	for _, tc := range []struct {
		r      recording
		passed bool
		failed []int // checkpoints with a failure
		limit  string
	}{
		{recording{name: "llama-server-b4748-qwen2-f32", api: "llamacpp", family: "tiny-llama-qwen2"}, false, []int{9, 11}, ""},
		{recording{name: "llama-server-b4748-qwen2-f32-kvf32", api: "llamacpp", family: "tiny-llama-qwen2"}, true, nil, ""},
		{recording{name: "llama-server-b4748-llama-f32-kvf32", api: "llamacpp", family: "tiny-llama"}, false, nil, "generation probabilities"},
		// Ollama adds the BOS to the text prompt itself; its default KV
		// cache is F16 too.
		{recording{name: "ollama-0.17.4-qwen2-f32", api: "ollama", model: "tiny-qwen2-f32", family: "tiny-llama-qwen2"}, false, []int{9, 11}, "text prompts"},
	} {
		t.Run(tc.r.name, func(t *testing.T) {
			rep := replay(t, tc.r)
			require.Equal(t, tc.r.api, rep.API.Name, rep.API.Chosen)
			var failed []int
			for _, r := range rep.Results {
				if r.Status == checkpoints.StatusFailed && !slices.Contains(failed, r.Checkpoint) {
					failed = append(failed, r.Checkpoint)
				}
				if r.Checkpoint == 12 {
					require.Equal(t, checkpoints.StatusPassed, r.Status, "%s %s: %s", r.Case, r.Name, r.Message)
				}
			}
			slices.Sort(failed)
			require.Equal(t, tc.failed, failed)
			require.Equal(t, tc.passed, rep.Passed, rep.Verdict())
			if tc.limit != "" {
				require.True(t, slices.ContainsFunc(rep.API.Limits, func(l checkpoints.Limit) bool { return l.Check == tc.limit }), "limit %q reported", tc.limit)
			}
			requireGolden(t, tc.r, rep)
		})
	}
}
