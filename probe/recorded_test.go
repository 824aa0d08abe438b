package probe

import (
	"bytes"
	"context"
	"flag"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/checkpoints"
	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/internal/httprecord"
	"github.com/llorch/llorch-check/tokenizer"
)

var update = flag.Bool("update", false, "rewrite the golden reports of the recorded engines")

// recording is a real engine's answers to a probe, recorded by probe
// --record against a server run by hand (docs/serve.md, "Engines
// recorded"): CI cannot build llama.cpp's server or Ollama, so their
// answers, byte for byte, are what the probe is tested against.
type recording struct {
	name  string // testdata/probe/NAME.jsonl.gz and NAME.report.json
	api   string // what detection must find
	model string // --model-name
}

var recordings = []recording{
	{"llama-server-b4748-f32", "llamacpp", ""},
	{"llama-server-b4748-q8_0", "llamacpp", ""},
	{"ollama-0.17.4-f32", "ollama", "tiny-f32"},
	{"ollama-0.17.4-q8_0", "ollama", "tiny-q8_0"},
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
	tok, err := tokenizer.Load(fixture.TinyModel())
	require.NoError(t, err)
	rep, err := Run(context.Background(), tinySet(t), Options{Endpoint: ts.URL, Model: r.model, Tokenizer: tok, Corpus: corpusDir()})
	require.NoError(t, err, "an engine's API limits are reported, never an error")
	require.Empty(t, player.Misses(), "the probe asked what the engine was never asked")
	return rep
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
		})
	}
	for _, engine := range []string{"llama-server-b4748", "ollama-0.17.4"} {
		require.Greater(t, kl[engine+"-q8_0"], kl[engine+"-f32"], "%s: Q8_0 weights cost more than F32", engine)
	}
}
