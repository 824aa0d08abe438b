package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/loader"
	"github.com/llorch/llorch-check/server"
	"github.com/llorch/llorch-check/tokenizer"
)

// gappedServer serves tiny-llama-mistral with Mistral's tokenizer.json
// less its tokens of U+0001, the byte-fallback <0x01> and the character's
// own (renamed, so the ids stay; the unknown token stands for the byte in
// prompts): no token spells U+0001,
// as a vocabulary without byte fallback lacks characters. Every grammar
// that needs it is a dead end there. Its log goes to buf.
func gappedServer(t *testing.T, buf *syncBuf) *testServer {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(fixture.Root(), "testdata", "tokenizer", "mistral-hf", "tokenizer.json"))
	require.NoError(t, err)
	var tj map[string]any
	require.NoError(t, json.Unmarshal(raw, &tj))
	vocab := tj["model"].(map[string]any)["vocab"].(map[string]any)
	for i, tok := range []string{"<0x01>", "\x01"} { // the byte token, and the character's own
		id, ok := vocab[tok]
		require.True(t, ok, "%q", tok)
		delete(vocab, tok)
		vocab[fmt.Sprintf("gone-%d", i)] = id
	}
	for tok := range vocab {
		require.NotContains(t, tok, "\x01")
	}
	path := filepath.Join(t.TempDir(), "tokenizer.json")
	raw, err = json.Marshal(tj)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, raw, 0o644))
	tok, err := tokenizer.LoadTokenizerJSON(path)
	require.NoError(t, err)
	m, err := loader.LoadWith(fixture.FamilyModel("tiny-llama-mistral"), loader.Options{AsStored: true})
	require.NoError(t, err)
	srv := server.New(server.Config{Logger: slog.New(slog.NewJSONHandler(buf, nil))})
	require.NoError(t, srv.SetModel(m, tok))
	return serve(t, srv)
}

// TestGrammarDeadEndIsTheClients (issue #42): a grammar the model's
// vocabulary cannot follow is the request's fault. One it cannot begin is
// a 400 naming the constraint's field before generation, on every
// generating route; one it cannot continue past some text ends the answer
// with GRAMMAR_DEAD_END (a 400 unstreamed, an error chunk or event
// streamed), and neither is a 500 logged at ERROR. A grammar with another
// way the vocabulary can take still runs.
func TestGrammarDeadEndIsTheClients(t *testing.T) {
	var buf syncBuf
	ts := gappedServer(t, &buf)
	const dead, later = `root ::= "\x01"`, `root ::= "a" "\x01"`

	t.Run("first step", func(t *testing.T) {
		for _, c := range []struct {
			path string
			body map[string]any
		}{
			{"/v1/completions", map[string]any{"prompt": "Hi", "grammar": dead}},
			{"/v1/chat/completions", map[string]any{"messages": chatMessages, "grammar": dead}},
			{"/generate", map[string]any{"prompts": []string{"Hi"}, "grammar": dead}},
			{"/execute", map[string]any{"job_id": "d", "prompt": "Hi", "grammar": dead}},
		} {
			out := ts.call(t, "POST", c.path, c.body, http.StatusBadRequest)
			field, msg := "", ""
			if e, ok := out["error"].(map[string]any); ok {
				field, msg = e["param"].(string), e["message"].(string)
			} else {
				e := out["errors"].([]any)[0].(map[string]any)
				field, msg = e["field"].(string), e["message"].(string)
			}
			require.Equal(t, "grammar", field, c.path)
			require.Contains(t, msg, "no token of this model's vocabulary can begin", c.path)
		}
		out := ts.call(t, "POST", "/v1/completions", map[string]any{"prompt": "Hi", "max_tokens": 3,
			"grammar": `root ::= "\x01" | "b"`}, http.StatusOK)
		require.Equal(t, "b", choice0(t, out)["text"], "the way the vocabulary can take")
	})

	t.Run("later step", func(t *testing.T) {
		e := ts.call(t, "POST", "/v1/completions", map[string]any{"prompt": "Hi", "max_tokens": 4, "grammar": later},
			http.StatusBadRequest)["error"].(map[string]any)
		require.Equal(t, "GRAMMAR_DEAD_END", e["code"])
		require.Equal(t, "invalid_request_error", e["type"])
		require.Contains(t, e["message"], "allows no token of this model's vocabulary")

		chunks := streamChunks(t, ts, "/v1/chat/completions", map[string]any{"messages": chatMessages, "max_tokens": 4,
			"grammar": later, "stream": true})
		last := chunks[len(chunks)-1]["error"].(map[string]any)
		require.Equal(t, "GRAMMAR_DEAD_END", last["code"])
		require.Equal(t, "invalid_request_error", last["type"])

		_, _, terminal, data := ts.execute(t, context.Background(), map[string]any{"job_id": "l", "prompt": "Hi", "max_tokens": 4, "grammar": later}).run(t)
		require.Equal(t, "error", terminal)
		require.Equal(t, "GRAMMAR_DEAD_END", data["code"])
	})
	require.NotContains(t, buf.String(), `"level":"ERROR"`)
	require.True(t, strings.Contains(buf.String(), "dead end"), "logged below ERROR")
	text := scrape(t, ts)
	require.NotContains(t, text, `outcome="server_error"`)
}
