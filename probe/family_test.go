package probe

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/references"
	"github.com/llorch/llorch-check/tokenizer"
)

// TestProbeFamilyServer probes llorch-check's own server on a Llama-family
// model against that model's reference set, whose generations carry ids
// but no text (written without a Python tokenizer): with the model's
// tokenizer the text is derived and compared; without one, the ids still
// are and nothing breaks. A swapped SwiGLU fails checkpoint 9.
func TestProbeFamilyServer(t *testing.T) {
	const name = "tiny-llama-qwen2"
	set, err := references.Open(fixture.FamilyReferences(name))
	require.NoError(t, err)
	tok, err := tokenizer.Load(fixture.FamilyModel(name))
	require.NoError(t, err)
	served := func(fault model.Fault) string {
		ts := httptest.NewServer(familyServer(t, name, fault))
		t.Cleanup(ts.Close)
		return ts.URL
	}
	url := served(model.FaultNone)
	for _, tc := range []struct {
		name string
		tok  *tokenizer.Tokenizer
	}{{"with tokenizer", tok}, {"without", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Run(context.Background(), set, Options{Endpoint: url, Tokenizer: tc.tok, NoInvariance: true})
			require.NoError(t, err)
			require.True(t, rep.Passed, rep.Verdict())
			texts := 0
			for _, r := range rep.Results {
				if r.Checkpoint == 12 && r.Name == "generation" {
					texts++
				}
			}
			if tc.tok != nil {
				require.Equal(t, len(set.Manifest.Cases), texts, "each generation's text compared")
			} else {
				require.Zero(t, texts)
			}
		})
	}
	rep, err := Run(context.Background(), set, Options{Endpoint: served(model.FaultSwiGLUSwap), Tokenizer: tok, NoInvariance: true})
	require.NoError(t, err)
	require.False(t, rep.Passed)
}
