package server_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/server"
)

// fieldsOf returns the field names of a 400 {"errors":[...]} answer.
func fieldsOf(t *testing.T, out map[string]any) []string {
	t.Helper()
	var names []string
	for _, e := range out["errors"].([]any) {
		fe := e.(map[string]any)
		require.NotEmpty(t, fe["constraint"])
		require.NotEmpty(t, fe["message"])
		names = append(names, fe["field"].(string))
	}
	return names
}

func TestExecuteFieldErrorsNameEachField(t *testing.T) {
	ts := start(t, server.Config{})
	ok := func() map[string]any { return map[string]any{"job_id": "v", "prompt": "Hi", "max_tokens": 2} }
	cases := []struct {
		field string
		set   func(m map[string]any)
	}{
		{"job_id", func(m map[string]any) { delete(m, "job_id") }},
		{"job_id", func(m map[string]any) { m["job_id"] = "" }},
		{"job_id", func(m map[string]any) { m["job_id"] = 5 }},
		{"job_id", func(m map[string]any) { m["job_id"] = strings.Repeat("j", 129) }},
		{"job_id", func(m map[string]any) { m["job_id"] = "has space" }},
		{"prompt", func(m map[string]any) { delete(m, "prompt") }},
		{"prompt", func(m map[string]any) { m["prompt"] = "" }},
		{"prompt", func(m map[string]any) { m["prompt"] = strings.Repeat("a", 32769) }},
		{"max_tokens", func(m map[string]any) { m["max_tokens"] = 0 }},
		{"max_tokens", func(m map[string]any) { m["max_tokens"] = 2049 }},
		{"max_tokens", func(m map[string]any) { m["max_tokens"] = 1.5 }},
		{"max_tokens", func(m map[string]any) { m["max_tokens"] = 128 }}, // + 1 prompt token > 128
		{"temperature", func(m map[string]any) { m["temperature"] = -0.1 }},
		{"temperature", func(m map[string]any) { m["temperature"] = 2.5 }},
		{"temperature", func(m map[string]any) { m["temperature"] = "hot" }},
		{"top_p", func(m map[string]any) { m["top_p"] = 1.5 }},
		{"top_p", func(m map[string]any) { m["top_p"] = 0 }},
		{"top_k", func(m map[string]any) { m["top_k"] = -1 }},
		{"repetition_penalty", func(m map[string]any) { m["repetition_penalty"] = 0 }},
		{"repetition_penalty", func(m map[string]any) { m["repetition_penalty"] = 2.5 }},
		{"min_p", func(m map[string]any) { m["min_p"] = 1.1 }},
		{"stop", func(m map[string]any) { m["stop"] = []string{"a", "b", "c", "d", "e"} }},
		{"stop[1]", func(m map[string]any) { m["stop"] = []string{"a", ""} }},
		{"stop[0]", func(m map[string]any) { m["stop"] = []string{strings.Repeat("x", 101)} }},
		{"stop", func(m map[string]any) { m["stop"] = 3 }},
		{"seed", func(m map[string]any) { m["seed"] = -1 }},
		{"seed", func(m map[string]any) { m["seed"] = "abc" }},
	}
	for _, c := range cases {
		body := ok()
		c.set(body)
		out := ts.call(t, "POST", "/execute", body, http.StatusBadRequest)
		require.Equal(t, []string{c.field}, fieldsOf(t, out), "body %v", body)
	}
	// Every bad field at once is named at once.
	out := ts.call(t, "POST", "/execute", map[string]any{"prompt": "", "max_tokens": 0, "temperature": 9, "top_p": 2, "stop": []string{""}}, http.StatusBadRequest)
	require.ElementsMatch(t, []string{"job_id", "prompt", "max_tokens", "temperature", "top_p", "stop[0]"}, fieldsOf(t, out))
	// The context check runs alongside other bad fields.
	out = ts.call(t, "POST", "/execute", map[string]any{"job_id": "v", "prompt": "Hi", "max_tokens": 128, "temperature": 9}, http.StatusBadRequest)
	require.ElementsMatch(t, []string{"max_tokens", "temperature"}, fieldsOf(t, out))
}

func TestBatchFieldErrors(t *testing.T) {
	ts := start(t, server.Config{MaxBatch: 2})
	out := ts.call(t, "POST", "/generate", map[string]any{"prompts": []string{"a", "b", "c"}}, http.StatusBadRequest)
	require.Equal(t, []string{"prompts"}, fieldsOf(t, out))
	out = ts.call(t, "POST", "/generate", map[string]any{"prompts": []string{"a", ""}, "temperature": 5}, http.StatusBadRequest)
	require.ElementsMatch(t, []string{"prompts[1]", "temperature"}, fieldsOf(t, out))
	out = ts.call(t, "POST", "/generate", map[string]any{"prompts": []string{strings.Repeat("word ", 100)}, "max_tokens": 100}, http.StatusBadRequest)
	require.Equal(t, []string{"max_tokens"}, fieldsOf(t, out), "the one prompt fits alone")
	out = ts.call(t, "POST", "/generate", map[string]any{"prompts": []string{"a", strings.Repeat("word ", 100)}, "max_tokens": 100}, http.StatusBadRequest)
	require.Equal(t, []string{"prompts[1]"}, fieldsOf(t, out), "one of several")
	out = ts.call(t, "POST", "/loglikelihood", map[string]any{"prompts": []string{"a", "b"}, "continuations": []string{" c"}}, http.StatusBadRequest)
	require.Equal(t, []string{"continuations"}, fieldsOf(t, out))
	out = ts.call(t, "POST", "/loglikelihood", map[string]any{"prompts": []string{"a"}, "continuations": []string{""}}, http.StatusBadRequest)
	require.Equal(t, []string{"continuations[0]"}, fieldsOf(t, out))
	out = ts.call(t, "POST", "/loglikelihood", map[string]any{}, http.StatusBadRequest)
	require.ElementsMatch(t, []string{"prompts", "continuations"}, fieldsOf(t, out))
	out = ts.call(t, "POST", "/cancel", map[string]any{}, http.StatusBadRequest)
	require.Equal(t, []string{"job_id"}, fieldsOf(t, out))
}

func TestMalformedBodies(t *testing.T) {
	ts := start(t, server.Config{MaxBodyBytes: 1024})
	for _, path := range []string{"/execute", "/generate", "/loglikelihood", "/cancel"} {
		out := ts.call(t, "POST", path, []byte(`{"job_id": "x", `), http.StatusBadRequest)
		require.Equal(t, []string{"body"}, fieldsOf(t, out), path)
		out = ts.call(t, "POST", path, []byte(`[1,2]`), http.StatusBadRequest)
		require.Equal(t, []string{"body"}, fieldsOf(t, out), path)
	}
	out := ts.call(t, "POST", "/v1/completions", []byte(`{`), http.StatusBadRequest)
	require.Equal(t, "body", out["error"].(map[string]any)["param"])

	// Wrong content type.
	req, _ := http.NewRequest("POST", ts.URL+"/execute", strings.NewReader(`{"job_id":"x","prompt":"y"}`))
	req.Header.Set("Content-Type", "text/plain")
	resp, err := ts.client.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode)

	// Oversized body.
	big := []byte(`{"job_id":"x","prompt":"` + strings.Repeat("a", 2048) + `"}`)
	resp = ts.do(t, "POST", "/execute", big)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, "%s", b)
	require.True(t, bytes.Contains(b, []byte("BODY_TOO_LARGE")))
}

// TestDefaultMaxTokensFitsTheContext: a prompt that fits the context must
// not fail because a default max_tokens (100, 128, 16) does not fit beside
// it; the default shrinks to the room left. An explicit max_tokens beyond
// the context stays a 400 naming the field.
func TestDefaultMaxTokensFitsTheContext(t *testing.T) {
	ts := start(t, server.Config{})
	prompt := strings.Repeat(" word", 120) // 120 tokens of the 128-token context
	t.Run("execute", func(t *testing.T) {
		_, tokens, terminal, last := ts.execute(t, context.Background(), map[string]any{
			"job_id": "d", "prompt": prompt, "temperature": 0}).run(t)
		require.Equal(t, "end", terminal, last)
		require.LessOrEqual(t, len(tokens), 8)
		out := ts.call(t, "POST", "/execute", map[string]any{"job_id": "e", "prompt": prompt, "max_tokens": 9}, http.StatusBadRequest)
		require.Equal(t, []string{"max_tokens"}, fieldsOf(t, out))
	})
	t.Run("generate", func(t *testing.T) {
		out := ts.call(t, "POST", "/generate", map[string]any{"prompts": []string{prompt, "Hi"}, "temperature": 0}, http.StatusOK)
		require.Len(t, out["completions"], 2)
		require.Equal(t, "max_tokens", out["finish_reasons"].([]any)[0])
		usage := out["usage"].(map[string]any)
		require.LessOrEqual(t, usage["completion_tokens"], float64(8+128))
		out = ts.call(t, "POST", "/generate", map[string]any{"prompts": []string{prompt}, "max_tokens": 9}, http.StatusBadRequest)
		require.Equal(t, []string{"max_tokens"}, fieldsOf(t, out))
		out = ts.call(t, "POST", "/generate", map[string]any{"prompts": []string{strings.Repeat(" word", 128)}}, http.StatusBadRequest)
		require.Equal(t, []string{"prompts[0]"}, fieldsOf(t, out))
		require.Contains(t, out["errors"].([]any)[0].(map[string]any)["message"], "leaves no room")
	})
	t.Run("completions", func(t *testing.T) {
		out := ts.call(t, "POST", "/v1/completions", map[string]any{"prompt": strings.Repeat(" word", 120), "temperature": 0}, http.StatusOK)
		require.LessOrEqual(t, out["usage"].(map[string]any)["completion_tokens"], float64(8))
		ts.call(t, "POST", "/v1/completions", map[string]any{"prompt": prompt, "max_tokens": 9}, http.StatusBadRequest)
	})
}
