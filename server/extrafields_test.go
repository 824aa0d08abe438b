package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture/tiny"
	"github.com/llorch/llorch-check/server"
)

// postUnused posts body to path and returns the status, the answer and
// its X-Unused-Fields header.
func postUnused(t *testing.T, ts *testServer, path string, body map[string]any) (int, string, string) {
	t.Helper()
	resp := ts.do(t, "POST", path, body)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b), resp.Header.Get("X-Unused-Fields")
}

// TestOpenAIFieldsAcceptedAndUnused: OpenAI's own fields that do not apply
// here are accepted (not "not a parameter of this endpoint"), checked to
// have OpenAI's type, and listed in X-Unused-Fields; those asking for
// what the server cannot do are a 400 naming them.
func TestOpenAIFieldsAcceptedAndUnused(t *testing.T) {
	ts := start(t, server.Config{})
	chat := func(extra map[string]any) map[string]any {
		body := map[string]any{"messages": chatMessages, "max_tokens": 2}
		for k, v := range extra {
			body[k] = v
		}
		return body
	}
	completion := func(extra map[string]any) map[string]any {
		body := map[string]any{"prompt": "Hello", "max_tokens": 2}
		for k, v := range extra {
			body[k] = v
		}
		return body
	}
	embedding := func(extra map[string]any) map[string]any {
		body := map[string]any{"input": "Hello"}
		for k, v := range extra {
			body[k] = v
		}
		return body
	}
	accepted := []struct {
		path  string
		body  map[string]any
		field string
	}{
		{"/v1/chat/completions", chat(map[string]any{"metadata": map[string]string{"team": "eval"}}), "metadata"},
		{"/v1/chat/completions", chat(map[string]any{"store": true}), "store"},
		{"/v1/chat/completions", chat(map[string]any{"user": "u-1"}), "user"},
		{"/v1/chat/completions", chat(map[string]any{"safety_identifier": "h-1"}), "safety_identifier"},
		{"/v1/chat/completions", chat(map[string]any{"prompt_cache_key": "k"}), "prompt_cache_key"},
		{"/v1/chat/completions", chat(map[string]any{"prompt_cache_retention": "24h"}), "prompt_cache_retention"},
		{"/v1/chat/completions", chat(map[string]any{"service_tier": "auto"}), "service_tier"},
		{"/v1/chat/completions", chat(map[string]any{"reasoning_effort": "low"}), "reasoning_effort"},
		{"/v1/chat/completions", chat(map[string]any{"verbosity": "low"}), "verbosity"},
		{"/v1/chat/completions", chat(map[string]any{"parallel_tool_calls": false}), "parallel_tool_calls"},
		{"/v1/chat/completions", chat(map[string]any{"prediction": map[string]any{"type": "content", "content": "x"}}), "prediction"},
		{"/v1/chat/completions", chat(map[string]any{"modalities": []string{"text"}}), "modalities"},
		{"/v1/completions", completion(map[string]any{"user": "u-1"}), "user"},
		{"/v1/embeddings", embedding(map[string]any{"user": "u-1"}), "user"},
	}
	for _, c := range accepted {
		t.Run(c.path+" "+c.field, func(t *testing.T) {
			status, body, unused := postUnused(t, ts, c.path, c.body)
			require.Equal(t, http.StatusOK, status, body)
			require.Equal(t, c.field, unused)
		})
	}
	status, body, unused := postUnused(t, ts, "/v1/chat/completions", chat(map[string]any{"store": false, "metadata": map[string]string{}, "service_tier": "default"}))
	require.Equal(t, http.StatusOK, status, body)
	require.Equal(t, "metadata, store, service_tier", unused, "every one given, in the list's order")
	status, _, unused = postUnused(t, ts, "/v1/chat/completions", chat(map[string]any{"store": nil}))
	require.Equal(t, http.StatusOK, status)
	require.Empty(t, unused, "null is not given")

	refused := []struct {
		body       map[string]any
		param, msg string
	}{
		{chat(map[string]any{"metadata": map[string]any{"n": 1}}), "metadata", "must be an object of strings"},
		{chat(map[string]any{"store": "yes"}), "store", "must be a boolean"},
		{chat(map[string]any{"reasoning_effort": 3}), "reasoning_effort", "must be a string"},
		{chat(map[string]any{"prediction": "x"}), "prediction", "must be an object"},
		{chat(map[string]any{"modalities": []string{"text", "audio"}}), "modalities", "text only"},
		{chat(map[string]any{"modalities": "text"}), "modalities", "must be an array of strings"},
		{chat(map[string]any{"audio": map[string]any{"voice": "alloy", "format": "wav"}}), "audio", "text only"},
		{chat(map[string]any{"web_search_options": map[string]any{}}), "web_search_options", "cannot search the web"},
		{completion(map[string]any{"metadata": map[string]string{}}), "metadata", "not a parameter of this endpoint"},
		{embedding(map[string]any{"user": 5}), "user", "must be a string"},
	}
	for _, c := range refused {
		t.Run(fmt.Sprintf("refused %s", c.param), func(t *testing.T) {
			path := "/v1/chat/completions"
			if _, ok := c.body["prompt"]; ok {
				path = "/v1/completions"
			} else if _, ok := c.body["input"]; ok {
				path = "/v1/embeddings"
			}
			e := ts.call(t, "POST", path, c.body, http.StatusBadRequest)["error"].(map[string]any)
			require.Equal(t, c.param, e["param"], e["message"])
			require.Contains(t, e["message"], c.msg)
		})
	}
}

// TestLenientLogsIgnoredFieldsOnce: --lenient ignores unknown fields (and
// chat messages' unknown keys) but logs each name the first time, not per
// request, up to a bound on the names; X-Unused-Fields lists them.
func TestLenientLogsIgnoredFieldsOnce(t *testing.T) {
	var buf syncBuf
	m, tok, _ := tiny.Load(t)
	srv := server.New(server.Config{Lenient: true, Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
	require.NoError(t, srv.SetModel(m, tok))
	ts := serve(t, srv)
	msgs := []map[string]any{{"role": "user", "content": "Hi", "weight": 1}}
	for range 3 {
		status, body, unused := postUnused(t, ts, "/v1/chat/completions", map[string]any{"messages": msgs, "max_tokens": 1, "top_a": 0.5, "mirostat": 2})
		require.Equal(t, http.StatusOK, status, body)
		require.Equal(t, "mirostat, top_a, messages[].weight", unused)
		status, body, unused = postUnused(t, ts, "/v1/completions", map[string]any{"prompt": "Hi", "max_tokens": 1, "top_a": 0.5})
		require.Equal(t, http.StatusOK, status, body)
		require.Equal(t, "top_a", unused)
		status, body, unused = postUnused(t, ts, "/v1/embeddings", map[string]any{"input": "Hi", "truncate": true})
		require.Equal(t, http.StatusOK, status, body)
		require.Equal(t, "truncate", unused)
	}
	require.Equal(t, map[string]int{"top_a": 1, "mirostat": 1, "messages[].weight": 1, "truncate": 1}, ignoredLogged(t, buf.String()))

	// A client making names up cannot grow the log or the memory without
	// bound: 256 names are logged, then one line says the rest are not.
	buf = syncBuf{}
	many := map[string]any{"prompt": "Hi", "max_tokens": 1}
	for i := range 300 {
		many[fmt.Sprintf("x%03d", i)] = 1
	}
	status, body, unused := postUnused(t, ts, "/v1/completions", many)
	require.Equal(t, http.StatusOK, status, body)
	require.True(t, strings.HasSuffix(unused, ", and 284 more"), unused)
	logged := ignoredLogged(t, buf.String())
	require.Len(t, logged, 256-4+1, "the names up to the bound, and the line saying the rest are not logged")
	require.Equal(t, 1, logged[""])
}

// ignoredLogged counts the log lines about ignored fields by field name
// ("" for the line saying further names are not logged).
func ignoredLogged(t *testing.T, logs string) map[string]int {
	t.Helper()
	n := map[string]int{}
	for line := range strings.SplitSeq(strings.TrimSpace(logs), "\n") {
		var rec struct{ Msg, Field string }
		require.NoError(t, json.Unmarshal([]byte(line), &rec), line)
		if strings.Contains(rec.Msg, "--lenient") {
			n[rec.Field]++
		}
	}
	return n
}
