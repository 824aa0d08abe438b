package server_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture/tiny"
	"github.com/llorch/llorch-check/server"
)

// nativeBodies are a valid request of each native model route, to which
// the tests add fields.
func nativeBodies() map[string]map[string]any {
	return map[string]map[string]any{
		"/execute":       {"job_id": "j", "prompt": "Hello", "max_tokens": 2},
		"/generate":      {"prompts": []string{"Hello"}, "max_tokens": 2},
		"/loglikelihood": {"prompts": []string{"Hello"}, "continuations": []string{" world"}},
	}
}

// TestNativeRoutesUnknownFields: a misspelt or made-up field on /execute,
// /generate or /loglikelihood is a 400 naming it, as on the OpenAI routes
// (issue #42 item 6); with --lenient it is ignored and logged once per
// name.
func TestNativeRoutesUnknownFields(t *testing.T) {
	ts := start(t, server.Config{})
	for path, body := range nativeBodies() {
		t.Run(path, func(t *testing.T) {
			body["temprature"], body["foo"] = 0.5, 1
			out := ts.call(t, "POST", path, body, http.StatusBadRequest)
			var fields []string
			for _, e := range out["errors"].([]any) {
				e := e.(map[string]any)
				require.Equal(t, "unknown", e["constraint"])
				fields = append(fields, e["field"].(string))
			}
			require.Equal(t, []string{"foo", "temprature"}, fields)
		})
	}

	var buf syncBuf
	m, tok, _ := tiny.Load(t)
	srv := server.New(server.Config{Lenient: true, Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
	require.NoError(t, srv.SetModel(m, tok))
	lenient := serve(t, srv)
	for range 2 {
		for path, body := range nativeBodies() {
			body["temprature"] = 0.5
			status, answer, _ := postUnused(t, lenient, path, body)
			require.Equal(t, http.StatusOK, status, "%s: %s", path, answer)
		}
	}
	require.Equal(t, map[string]int{"temprature": 1}, ignoredLogged(t, buf.String()))
}

// TestGenerateConstrained: /generate honours grammar, json_schema and
// response_format as /execute does, on GPT-2 and every Llama-family model:
// sampled at temperature 1, every completion is in the constraint's
// language; a constraint that does not compile is a 400 naming it.
func TestGenerateConstrained(t *testing.T) {
	servers := everyModel(t)
	yesNo := func(t *testing.T, s string) { require.Contains(t, []string{"yes", "no"}, s) }
	integer := func(t *testing.T, s string) {
		var n json.Number
		require.NoError(t, json.Unmarshal([]byte(s), &n), "%q", s)
		_, err := n.Int64()
		require.NoError(t, err, "%q", s)
	}
	colour := func(t *testing.T, s string) {
		var v string
		require.NoError(t, json.Unmarshal([]byte(s), &v), "%q", s)
		require.Contains(t, []string{"red", "green"}, v)
	}
	cases := []struct {
		name  string
		extra map[string]any
		check func(*testing.T, string)
	}{
		{"grammar", map[string]any{"grammar": `root ::= "yes" | "no"`}, yesNo},
		{"json_schema", map[string]any{"json_schema": map[string]any{"type": "integer"}}, integer},
		{"response_format", map[string]any{"response_format": map[string]any{"type": "json_schema",
			"json_schema": map[string]any{"name": "colour", "schema": map[string]any{"enum": []string{"red", "green"}}}}}, colour},
	}
	for _, s := range servers {
		ts := s.ts
		t.Run(s.name, func(t *testing.T) {
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					body := map[string]any{"prompts": []string{"Answer:", "The", "1"}, "max_tokens": 48, "temperature": 1, "seed": 7}
					for k, v := range c.extra {
						body[k] = v
					}
					out := ts.call(t, "POST", "/generate", body, http.StatusOK)
					for i, text := range out["completions"].([]any) {
						require.Equal(t, "eos", out["finish_reasons"].([]any)[i], "completion %d %q ends where the language does", i, text)
						c.check(t, text.(string))
					}
				})
			}
		})
	}
	out := servers[0].ts.call(t, "POST", "/generate", map[string]any{"prompts": []string{"Hi"}, "grammar": "root ::= ("}, http.StatusBadRequest)
	require.Equal(t, "grammar", out["errors"].([]any)[0].(map[string]any)["field"])
}
