package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/server"
	"github.com/llorch/llorch-check/tokenizer"
)

// TestChatFamilyTemplates: each Llama-family model answers chat
// completions in its own format (its tokenizer_config.json's template,
// the prompt encoded with the template's special tokens and no extra
// BOS), the same as a completion of those token ids; Mistral's template
// refusing a system message is a 400 carrying its message.
func TestChatFamilyTemplates(t *testing.T) {
	user := []map[string]any{{"role": "user", "content": "Hello"}}
	withSystem := append([]map[string]any{{"role": "system", "content": "Be brief."}}, user...)
	tests := []struct {
		model    string
		messages []map[string]any
		prompt   string // the rendering, as the model's authors format it
	}{
		{"tiny-llama", user, "<s>[INST] Hello [/INST]"},
		{"tiny-llama3", withSystem, "<s><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n" +
			"Be brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
		{"tiny-llama-qwen2", withSystem, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n"},
		{"tiny-llama-qwen3", withSystem, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n"},
		{"tiny-llama-mistral", user, "<s>[INST] Hello [/INST]"},
		{"tiny-llama-phi3", user, "<s><|user|>\nHello<|end|>\n<|assistant|>\n"},
		// Gemma's tiny models have Llama 2's vocabulary, and so its template.
		{"tiny-llama-gemma", user, "<s>[INST] Hello [/INST]"},
		{"tiny-llama-gemma2", user, "<s>[INST] Hello [/INST]"},
		{"tiny-llama-gemma3", user, "<s>[INST] Hello [/INST]"},
		// The mixtures of experts serve chat as their families' instruct models format it.
		{"tiny-llama-qwen3moe", withSystem, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n"},
		{"tiny-llama-mixtral", user, "<s>[INST] Hello [/INST]"},
	}
	for _, tc := range tests {
		t.Run(tc.model, func(t *testing.T) {
			ts, m, tok := familyServer(t, tc.model)

			info := ts.call(t, "GET", "/v1/models/"+tc.model, nil, http.StatusOK)
			require.Equal(t, "tokenizer_config.json", info["chat_template"])
			require.Equal(t, m.Config.ModelType, info["architecture"])

			ids := tok.EncodeSpecial(tc.prompt)
			if strings.HasPrefix(tc.prompt, "<s>") {
				require.Equal(t, 1, ids[0], "<s> is the BOS id, not text")
				require.NotEqual(t, 1, ids[1], "no second BOS")
			}
			plain := ts.call(t, "POST", "/v1/completions", map[string]any{"prompt": ids, "max_tokens": 6, "temperature": 0}, http.StatusOK)
			chat := ts.call(t, "POST", "/v1/chat/completions", map[string]any{"messages": tc.messages, "max_tokens": 6, "temperature": 0}, http.StatusOK)
			require.Equal(t, plain["usage"], chat["usage"], "the chat prompt is the template's rendering, tokenized with its special tokens")
			require.Equal(t, choice0(t, plain)["text"], choice0(t, chat)["message"].(map[string]any)["content"])
		})
	}

	t.Run("raised", func(t *testing.T) {
		ts, _, _ := familyServer(t, "tiny-llama")
		body := ts.call(t, "POST", "/v1/chat/completions", map[string]any{"messages": withSystem, "max_tokens": 2}, http.StatusBadRequest)
		require.Contains(t, body["error"].(map[string]any)["message"], "Conversation roles must alternate user/assistant")
	})
}

// familyServer serves a Llama-family tiny model with its own chat template.
func familyServer(t *testing.T, name string) (*testServer, *model.Model, *tokenizer.Tokenizer) {
	t.Helper()
	f := loadFamily(t, name)
	srv := server.New(server.Config{})
	require.NoError(t, srv.SetModelChat(f.m, f.tok, f.own))
	return serve(t, srv), f.m, f.tok
}
