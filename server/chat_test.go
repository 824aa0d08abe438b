package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture/tiny"
	"github.com/llorch/llorch-check/server"
)

var chatMessages = []map[string]any{{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello"}}

// chatPrompt is chatMessages under DefaultChatTemplate, written out.
const chatPrompt = "system: Be brief.\nuser: Hello\nassistant:"

// streamChunks reads an OpenAI stream to [DONE] and the end of the body.
func streamChunks(t *testing.T, ts *testServer, path string, body map[string]any) []map[string]any {
	t.Helper()
	resp := ts.do(t, "POST", path, body)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	sse := newSSEReader(resp.Body)
	var chunks []map[string]any
	for {
		ev, err := sse.Next()
		require.NoError(t, err)
		if ev.Data == "[DONE]" {
			_, err := sse.Next()
			require.ErrorIs(t, err, io.EOF, "nothing follows [DONE]")
			return chunks
		}
		var c map[string]any
		require.NoError(t, json.Unmarshal([]byte(ev.Data), &c))
		chunks = append(chunks, c)
	}
}

// TestChatIsCompletionOfTheTemplate: a chat request is the completion of
// its messages rendered by the model's template, in text, tokens and
// logprobs; streamed, it is the same text in chat.completion.chunk deltas;
// on GPT-2 and every Llama-family model.
func TestChatIsCompletionOfTheTemplate(t *testing.T) {
	messages := chatMessages[1:] // a user's message: some families' templates refuse a system one
	for _, s := range everyModel(t) {
		ts := s.ts
		t.Run(s.name, func(t *testing.T) {
			const n = 6
			plain := ts.call(t, "POST", "/v1/completions", map[string]any{
				"prompt": s.chatIDs(t, server.ChatMessage{Role: "user", Content: "Hello"}), "max_tokens": n, "temperature": 0, "logprobs": 2}, http.StatusOK)
			want := choice0(t, plain)
			chat := ts.call(t, "POST", "/v1/chat/completions", map[string]any{
				"messages": messages, "max_tokens": n, "temperature": 0, "logprobs": true, "top_logprobs": 2}, http.StatusOK)
			require.Equal(t, "chat.completion", chat["object"])
			require.Regexp(t, "^chatcmpl-", chat["id"])
			require.Equal(t, plain["usage"], chat["usage"])
			got := choice0(t, chat)
			require.Equal(t, map[string]any{"role": "assistant", "content": want["text"]}, got["message"])
			require.Equal(t, want["finish_reason"], got["finish_reason"])

			legacy := want["logprobs"].(map[string]any)
			content := got["logprobs"].(map[string]any)["content"].([]any)
			require.Len(t, content, n)
			for i, c := range content {
				c := c.(map[string]any)
				require.Equal(t, legacy["tokens"].([]any)[i], c["token"])
				require.Equal(t, legacy["token_logprobs"].([]any)[i], c["logprob"])
				require.Equal(t, c["token"], string(intBytes(c["bytes"])), "bytes are the token's UTF-8")
				top := c["top_logprobs"].([]any)
				require.Len(t, top, 2)
				for _, alt := range top {
					alt := alt.(map[string]any)
					require.Equal(t, legacy["top_logprobs"].([]any)[i].(map[string]any)[alt["token"].(string)], alt["logprob"])
				}
			}

			chunks := streamChunks(t, ts, "/v1/chat/completions", map[string]any{"messages": messages,
				"max_completion_tokens": n, "temperature": 0, "stream": true, "stream_options": map[string]any{"include_usage": true}})
			text, finish := "", ""
			for i, c := range chunks[:len(chunks)-1] {
				require.Equal(t, "chat.completion.chunk", c["object"])
				delta := choice0(t, c)["delta"].(map[string]any)
				require.Equal(t, i == 0, delta["role"] == "assistant", "the role comes in the first chunk only")
				text += delta["content"].(string)
				if r, ok := choice0(t, c)["finish_reason"].(string); ok {
					finish = r
				}
			}
			require.Equal(t, want["text"], text)
			require.Equal(t, want["finish_reason"], finish)
			last := chunks[len(chunks)-1]
			require.Empty(t, last["choices"])
			require.Equal(t, plain["usage"], last["usage"])

			// Streamed logprobs: one entry per token chunk, the same as unstreamed.
			chunks = streamChunks(t, ts, "/v1/chat/completions", map[string]any{"messages": messages,
				"max_tokens": n, "temperature": 0, "stream": true, "logprobs": true, "top_logprobs": 2})
			var streamed []any
			for _, c := range chunks {
				if lp, ok := choice0(t, c)["logprobs"].(map[string]any); ok {
					streamed = append(streamed, lp["content"].([]any)...)
				}
			}
			require.Equal(t, content, streamed)
		})
	}
}

// TestChatDefaultLength: without max_tokens a reply may fill the context
// (OpenAI's chat default), and max_tokens 0 is refused.
func TestChatDefaultLength(t *testing.T) {
	ts := start(t, server.Config{})
	m, _, _ := tiny.Load(t)
	out := ts.call(t, "POST", "/v1/chat/completions", map[string]any{"messages": chatMessages,
		"logit_bias": map[string]int{"50256": -100}}, http.StatusOK)
	u := out["usage"].(map[string]any)
	require.EqualValues(t, m.Config.NPositions, u["total_tokens"], "generated up to the context length")
	require.Equal(t, "length", choice0(t, out)["finish_reason"])
	e := ts.call(t, "POST", "/v1/chat/completions", map[string]any{"messages": chatMessages, "max_tokens": 0}, http.StatusBadRequest)
	require.Equal(t, "max_tokens", e["error"].(map[string]any)["param"])
}

// TestChatTemplate: --chat-template replaces the plain template; a
// template that cannot render a conversation is refused when parsed.
func TestChatTemplate(t *testing.T) {
	tmpl, err := server.ParseChatTemplate("tags", `{{range .Messages}}<{{.Role}}>{{.Content}}</{{.Role}}>{{end}}<assistant>`)
	require.NoError(t, err)
	ts := start(t, server.Config{ChatTemplate: tmpl})
	const rendered = "<system>Be brief.</system><user>Hello</user><assistant>"
	_, tok, _ := tiny.Load(t)
	out := ts.call(t, "POST", "/v1/chat/completions", map[string]any{"messages": chatMessages, "max_tokens": 1}, http.StatusOK)
	require.EqualValues(t, len(tok.Encode(rendered)), out["usage"].(map[string]any)["prompt_tokens"])
	model := ts.call(t, "GET", "/v1/models/tiny-gpt2", nil, http.StatusOK)
	require.Equal(t, "tags", model["chat_template"])

	for _, bad := range []string{"{{range .Messages}}", "{{.Prompt}}", "{{range .Messages}}{{.Text}}{{end}}"} {
		_, err := server.ParseChatTemplate("bad", bad)
		require.Error(t, err, bad)
	}
}

// TestChatParametersRejected: what chat does not honour is a 400 naming
// it; neutral values of the unsupported parameters pass.
func TestChatParametersRejected(t *testing.T) {
	ts := start(t, server.Config{})
	for _, c := range []struct {
		name  string
		body  map[string]any
		param string
	}{
		{"no messages", map[string]any{"messages": nil}, "messages"},
		{"empty messages", map[string]any{"messages": []any{}}, "messages"},
		{"messages not a list", map[string]any{"messages": "Hello"}, "messages"},
		{"tool role", map[string]any{"messages": []any{map[string]any{"role": "tool", "content": "x"}}}, "messages[0].role"},
		{"image part", map[string]any{"messages": []any{map[string]any{"role": "user",
			"content": []any{map[string]any{"type": "image_url", "image_url": map[string]any{"url": "x"}}}}}}, "messages[0].content[0].type"},
		{"tool calls in a message", map[string]any{"messages": []any{map[string]any{"role": "assistant", "content": "x",
			"tool_calls": []any{map[string]any{"id": "1"}}}}}, "messages[0].tool_calls"},
		{"n of 0", map[string]any{"n": 0}, "n"},
		{"n above --max-batch", map[string]any{"n": 65}, "n"},
		{"tools", map[string]any{"tools": []any{map[string]any{"type": "function"}}}, "tools"},
		{"unknown output format", map[string]any{"response_format": map[string]any{"type": "xml"}}, "response_format.type"},
		{"top_logprobs without logprobs", map[string]any{"top_logprobs": 2}, "top_logprobs"},
		{"both max fields, unequal", map[string]any{"max_tokens": 2, "max_completion_tokens": 3}, "max_completion_tokens"},
		{"max_completion_tokens beyond the context", map[string]any{"max_completion_tokens": 5000}, "max_completion_tokens"},
		{"beyond the context", map[string]any{"max_tokens": 128}, "max_tokens"},
		{"unknown field", map[string]any{"top_a": 0.5}, "top_a"},
		{"stream_options without stream", map[string]any{"stream_options": map[string]any{"include_usage": true}}, "stream_options"},
		{"bias outside the vocabulary", map[string]any{"logit_bias": map[string]any{"50257": 1}}, "logit_bias.50257"},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := map[string]any{"messages": chatMessages}
			for k, v := range c.body {
				body[k] = v
			}
			e := ts.call(t, "POST", "/v1/chat/completions", body, http.StatusBadRequest)["error"].(map[string]any)
			require.Equal(t, c.param, e["param"], e["message"])
			require.Equal(t, "invalid_request_error", e["type"])
		})
	}
	for _, neutral := range []map[string]any{
		{"response_format": map[string]any{"type": "text"}}, {"tools": []any{}}, {"tool_choice": "none"}, {"store": false},
		{"n": 1, "user": "u-1", "max_tokens": 2, "max_completion_tokens": 2},
		{"messages": []any{map[string]any{"role": "user", "name": "ann", "refusal": nil,
			"content": []any{map[string]any{"type": "text", "text": "Hi"}}}}},
	} {
		body := map[string]any{"messages": chatMessages, "max_tokens": 2}
		for k, v := range neutral {
			body[k] = v
		}
		ts.call(t, "POST", "/v1/chat/completions", body, http.StatusOK)
	}
	e := ts.call(t, "POST", "/v1/chat/completions", map[string]any{"messages": chatMessages, "model": "gpt-4"}, http.StatusNotFound)
	require.Equal(t, "model_not_found", e["error"].(map[string]any)["code"])
}

// TestModelByID: /v1/models/{id} is the list's entry; another id is
// OpenAI's 404.
func TestModelByID(t *testing.T) {
	ts := start(t, server.Config{})
	list := ts.call(t, "GET", "/v1/models", nil, http.StatusOK)["data"].([]any)
	require.Len(t, list, 1)
	require.Equal(t, list[0], any(ts.call(t, "GET", "/v1/models/tiny-gpt2", nil, http.StatusOK)))
	for _, id := range []string{"gpt-4", "openai-community/gpt2"} {
		e := ts.call(t, "GET", "/v1/models/"+id, nil, http.StatusNotFound)["error"].(map[string]any)
		require.Equal(t, "model_not_found", e["code"])
		require.Equal(t, "not_found_error", e["type"])
		require.Equal(t, "model", e["param"])
	}
}
