package probe

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/references"
	"github.com/llorch/llorch-check/server"
	"github.com/llorch/llorch-check/tokenizer"
)

// serve runs llorch-check's own server on the tiny model on loopback,
// with fault injected into the model when not zero.
func serve(t *testing.T, fault model.Fault, layer int) string {
	t.Helper()
	m, err := model.Load(fixture.TinyModel())
	require.NoError(t, err)
	if fault != 0 {
		m.InjectFault(fault, layer)
	}
	tok, err := tokenizer.Load(fixture.TinyModel())
	require.NoError(t, err)
	srv := server.New(server.Config{})
	srv.SetModel(m, tok)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts.URL
}

func tinySet(t *testing.T) *references.Set {
	set, err := references.Open(fixture.TinyReferences())
	require.NoError(t, err)
	return set
}

// TestProbeOwnServer: llorch-check serve, seen from outside, passes: its
// prompt log-probabilities, log-likelihoods and greedy texts are the
// reference's.
func TestProbeOwnServer(t *testing.T) {
	rep, err := Run(context.Background(), tinySet(t), Options{Endpoint: serve(t, 0, -1)})
	require.NoError(t, err)
	require.True(t, rep.Passed, rep.Verdict())
	var table bytes.Buffer
	require.NoError(t, rep.WriteTable(&table))
	require.Contains(t, table.String(), "engine/torch vs f64", "the budget column names what was checked")
	seen := map[string]int{}
	for _, r := range rep.Results {
		seen[r.Name]++
	}
	require.Equal(t, map[string]int{"prompt_logprobs": 3, "top_logprobs": 3, "generation": 3, "loglikelihood": len(tinySet(t).Manifest.Loglikelihood)}, seen)
}

// TestProbeCatchesFaults: a server whose model has a classic porting bug
// fails, at checkpoint 9 first, whatever the bug.
func TestProbeCatchesFaults(t *testing.T) {
	for _, f := range []model.Fault{model.FaultErfGELU, model.FaultTransposedProj, model.FaultNoCausalMask,
		model.FaultAttnScale, model.FaultLayerNormEps, model.FaultNoResidual} {
		t.Run(f.String(), func(t *testing.T) {
			rep, err := Run(context.Background(), tinySet(t), Options{Endpoint: serve(t, f, -1)})
			require.NoError(t, err)
			require.False(t, rep.Passed)
			first := rep.Failures()[0]
			require.Equal(t, 9, first.Checkpoint, "%s", first.Name)
		})
	}
}

// TestProbeBadServers: unreachable, erroring or garbage-answering servers
// are errors, never a pass.
func TestProbeBadServers(t *testing.T) {
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<html>")) }))
	defer garbage.Close()
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", 500) }))
	defer failing.Close()
	empty := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"choices":[]}`)) }))
	defer empty.Close()
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	for _, url := range []string{garbage.URL, failing.URL, empty.URL, down.URL} {
		_, err := Run(context.Background(), tinySet(t), Options{Endpoint: url})
		require.Error(t, err, url)
		require.True(t, errors.Is(err, ErrServer), "%v", err)
	}
}
