package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/server"
)

// TestOpenAIErrorShape: every failure an OpenAI client can meet, routing
// and body errors included, is {"error":{"message","type","param","code"}}
// with the status OpenAI's SDKs map to their error classes.
func TestOpenAIErrorShape(t *testing.T) {
	ts := start(t, server.Config{APIKey: "k", MaxBodyBytes: 1 << 10})
	auth := []string{"Authorization", "Bearer k"}
	for _, c := range []struct {
		name, method, path string
		body               any
		header             []string
		status             int
		code               string
	}{
		{"unknown route", "GET", "/v1/assistants", nil, auth, http.StatusNotFound, "NOT_FOUND"},
		{"wrong method on chat", "GET", "/v1/chat/completions", nil, auth, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED"},
		{"wrong method on embeddings", "PUT", "/v1/embeddings", []byte(`{}`), auth, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED"},
		{"unknown model", "GET", "/v1/models/gpt-4", nil, auth, http.StatusNotFound, "model_not_found"},
		{"no key", "POST", "/v1/chat/completions", map[string]any{"messages": chatMessages}, nil, http.StatusUnauthorized, "UNAUTHORIZED"},
		{"malformed JSON", "POST", "/v1/chat/completions", []byte(`{"messages": [`), auth, http.StatusBadRequest, "INVALID_REQUEST"},
		{"body too large", "POST", "/v1/embeddings", map[string]any{"input": strings.Repeat("x", 2<<10)}, auth, http.StatusRequestEntityTooLarge, "BODY_TOO_LARGE"},
		{"bad field", "POST", "/v1/embeddings", map[string]any{"input": 5}, auth, http.StatusBadRequest, "INVALID_REQUEST"},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp := ts.do(t, c.method, c.path, c.body, c.header...)
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, c.status, resp.StatusCode, "%s", b)
			require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			var out map[string]map[string]any
			require.NoError(t, json.Unmarshal(b, &out), "%s", b)
			e := out["error"]
			require.ElementsMatch(t, []string{"message", "type", "param", "code"}, keys(e))
			require.Equal(t, c.code, e["code"])
			require.NotEmpty(t, e["message"])
			require.NotEmpty(t, e["type"])
		})
	}
}

func keys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}
