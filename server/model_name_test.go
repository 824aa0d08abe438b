package server_test

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/internal/fixture/tiny"
	"github.com/llorch/llorch-check/loader"
	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/server"
)

// TestModelNamedAfterGGUFFile: a GGUF model is named after its file, not
// the directory holding it (once "gguf", for any file kept in gguf/), in
// /health and /v1/models; an HF model after its directory.
func TestModelNamedAfterGGUFFile(t *testing.T) {
	m, tok, _ := tiny.Load(t)
	kv, tensors, err := loader.GGUF(m, gguf.GGMLTypeF32)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "gguf", "tiny-f32.gguf")
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, gguf.WriteFile(path, kv, tensors))
	g, err := loader.Load(path)
	require.NoError(t, err)

	for _, tc := range []struct {
		m    *model.Model
		want string
	}{
		{g, "tiny-f32"},
		{m, "tiny-gpt2"},
	} {
		srv := server.New(server.Config{})
		require.NoError(t, srv.SetModel(tc.m, tok))
		ts := serve(t, srv)
		require.Equal(t, tc.want, ts.call(t, "GET", "/health", nil, http.StatusOK)["model"])
		models := ts.call(t, "GET", "/v1/models", nil, http.StatusOK)["data"].([]any)
		require.Equal(t, tc.want, models[0].(map[string]any)["id"])
	}
}
