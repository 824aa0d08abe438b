package probe

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/loader"
	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/references"
	"github.com/llorch/llorch-check/server"
	"github.com/llorch/llorch-check/tokenizer"
)

// TestProbeRefusesAnotherModelsSet: a reference set of one model against a
// server of another is refused before any case is sent, naming both
// models as the set's manifest and the server's /v1/models describe them,
// whichever families they are; a llama.cpp server's meta.n_vocab counts.
func TestProbeRefusesAnotherModelsSet(t *testing.T) {
	gpt2, err := references.Open(fixture.TinyReferences())
	require.NoError(t, err)
	family := func(name string) *references.Set {
		set, err := references.Open(fixture.FamilyReferences(name))
		require.NoError(t, err)
		return set
	}
	llamacppModels := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/v1/models" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"qwen3.gguf","owned_by":"llamacpp","meta":{"n_vocab":32000}}]}`))
			return
		}
		http.Error(w, "token id must be 0..31999", http.StatusBadRequest)
	})
	for _, tc := range []struct {
		name    string
		set     *references.Set
		server  http.Handler
		api     string
		differs []string
	}{
		{"GPT-2's set, a Qwen3 server", gpt2, familyServer(t, "tiny-llama-qwen3", model.FaultNone), "",
			[]string{"architecture qwen3 (the set's: gpt2)", "vocab_size 32000 (the set's: 50257)"}},
		{"Qwen3's set, a GPT-2 server", family("tiny-llama-qwen3"), familyServer(t, "", model.FaultNone), "",
			[]string{"architecture gpt2 (the set's: qwen3)", "vocab_size 50257 (the set's: 32000)"}},
		{"Qwen2's set, a Qwen3 server", family("tiny-llama-qwen2"), familyServer(t, "tiny-llama-qwen3", model.FaultNone), "",
			[]string{"architecture qwen3 (the set's: qwen2)"}},
		{"GPT-2's set, llama.cpp's meta", gpt2, llamacppModels, "openai",
			[]string{"vocab_size 32000 (the set's: 50257)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var posts atomic.Int32
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost {
					posts.Add(1)
				}
				tc.server.ServeHTTP(w, r)
			}))
			defer ts.Close()
			_, err := Run(context.Background(), tc.set, Options{Endpoint: ts.URL, API: tc.api, NoInvariance: true})
			require.Error(t, err)
			require.Contains(t, err.Error(), "the reference set "+tc.set.Dir+" is for another model")
			require.Contains(t, err.Error(), tc.set.Manifest.Model.Path)
			for _, d := range tc.differs {
				require.Contains(t, err.Error(), d)
			}
			require.Zero(t, posts.Load(), "a case was sent: %v", err)
		})
	}
}

// familyServer serves the named Llama-family tiny model ("" the tiny
// GPT-2), with fault planted in every layer unless it is FaultNone.
func familyServer(t *testing.T, name string, fault model.Fault) http.Handler {
	t.Helper()
	dir := fixture.TinyModel()
	if name != "" {
		dir = fixture.FamilyModel(name)
	}
	m, err := loader.LoadWith(dir, loader.Options{AsStored: true})
	require.NoError(t, err)
	if fault != model.FaultNone {
		m.InjectFault(fault, -1)
	}
	tok, err := tokenizer.Load(dir)
	require.NoError(t, err)
	srv := server.New(server.Config{})
	require.NoError(t, srv.SetModel(m, tok))
	return srv.Handler()
}

// TestProbeKeyedServer: a server that wants a key, probed without one or
// with a wrong one, is told as such, whether the API is detected (the
// keyed route is not passed over for an open one) or named; with the key
// it passes.
func TestProbeKeyedServer(t *testing.T) {
	m, tok := tinyModel(t, model.FaultNone)
	srv := server.New(server.Config{APIKey: "k"})
	require.NoError(t, srv.SetModel(m, tok))
	url := startServer(t, srv.Handler())
	set := tinySet(t)
	for _, tc := range []struct {
		key, api, want string
	}{
		{"", "", "GET " + url + "/v1/models answered 401 Unauthorized (the server wants an API key: pass --api-key KEY"},
		{"wrong", "", "GET " + url + "/v1/models answered 401 Unauthorized (the server refused the API key given)"},
		{"", "llorch", "/generate answered 401"},
		{"", "worker", "/execute answered 401"},
		{"", "openai", "/v1/completions answered 401"},
	} {
		_, err := Run(context.Background(), set, Options{Endpoint: url, APIKey: tc.key, API: tc.api, NoInvariance: true})
		require.Error(t, err, "key %q, api %q", tc.key, tc.api)
		require.Contains(t, err.Error(), tc.want)
		if tc.key == "" {
			require.Contains(t, err.Error(), "the server wants an API key")
		}
	}
	rep, err := Run(context.Background(), set, Options{Endpoint: url, APIKey: "k", NoInvariance: true})
	require.NoError(t, err)
	require.True(t, rep.Passed, rep.Verdict())
}
