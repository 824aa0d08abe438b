package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/loader"
	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/server"
	"github.com/llorch/llorch-check/tokenizer"
)

// serve's chat with Gemma 3's tokenizer and template (a tiny Llama re-drawn
// with 262208 rows, realTokModels' Gemma entry) and Gemma 3's
// generation_config.json, whose eos_token_id is [1, 106]: a chat stops on
// <end_of_turn> (106) as on <eos> (1), and runs to max_tokens on another
// token; the prompt is the template's rendering with Gemma's control
// tokens as single ids.
func TestServeGemma3EndOfTurn(t *testing.T) {
	var r realTokModel
	for _, c := range realTokModels {
		if c.tok == "gemma3" {
			r = c
		}
	}
	require.Equal(t, "gemma3", r.tok)
	dir := r.make(t)
	// config.json names <eos> alone; generation_config.json adds
	// <end_of_turn>, as transformers' generate reads both.
	fixture.EditJSON(t, filepath.Join(dir, "config.json"), func(c map[string]any) { c["eos_token_id"] = 1 })
	require.NoError(t, os.WriteFile(filepath.Join(dir, model.GenerationConfigFile), []byte(`{"bos_token_id": 2, "eos_token_id": [1, 106]}`), 0o644))
	m, err := loader.Load(dir)
	require.NoError(t, err)
	require.Equal(t, []int{1, 106}, m.Config.EOSTokens())
	tok, err := tokenizer.Load(dir)
	require.NoError(t, err)
	own, err := server.ModelChatTemplate(m)
	require.NoError(t, err)
	require.NotNil(t, own)
	srv := server.New(server.Config{})
	require.NoError(t, srv.SetModelChat(m, tok, own))
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()

	prompt := tok.EncodeSpecial("<bos><start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\n")
	require.Equal(t, []int{2, 105}, prompt[:2], "<bos> and <start_of_turn> are single ids")
	for _, c := range []struct {
		name    string
		bias    int
		finish  string
		written int
	}{
		{"end of turn", 106, "stop", 0},
		{"eos", 1, "stop", 0},
		{"newline", 107, "length", 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			body, err := json.Marshal(map[string]any{
				"messages":   []map[string]any{{"role": "user", "content": "Hello"}},
				"max_tokens": 4, "temperature": 0, "logit_bias": map[string]any{fmt.Sprint(c.bias): 100},
			})
			require.NoError(t, err)
			resp, err := http.Post(ts.URL+"/v1/chat/completions", "application/json", bytes.NewReader(body))
			require.NoError(t, err)
			defer resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
			var out struct {
				Choices []struct {
					FinishReason string `json:"finish_reason"`
					Message      struct{ Content string }
				}
				Usage struct {
					PromptTokens     int `json:"prompt_tokens"`
					CompletionTokens int `json:"completion_tokens"`
				}
			}
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
			require.Len(t, out.Choices, 1)
			assert.Equal(t, c.finish, out.Choices[0].FinishReason)
			assert.Equal(t, len(prompt), out.Usage.PromptTokens, "the prompt is the template's rendering")
			want, err := tok.DecodeContinuation(repeat(c.bias, c.written))
			require.NoError(t, err)
			assert.Equal(t, want, out.Choices[0].Message.Content)
		})
	}
}

func repeat(id, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = id
	}
	return out
}
