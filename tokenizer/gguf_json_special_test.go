package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/gguf"
)

// SpecialVocab's rules, each on a small tokenizer: ids from
// tokenizer_config.json's tokens, else config.json's integers; add_bos and
// add_eos from the post-processor's template, overridden by
// tokenizer_config.json; a template ending in another token than the EOS
// making that one the EOS and the configured one the EOT; the chat
// template from tokenizer_config.json or chat_template.jinja.
func TestSpecialVocab(t *testing.T) {
	added := `[{"id": 0, "content": "<s>", "special": true}, {"id": 1, "content": "</s>", "special": true},
		{"id": 2, "content": "<|eot|>", "special": true}, {"id": 3, "content": "<pad>", "special": true}]`
	bosFirst := `{"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>"}}, {"Sequence": {"id": "A"}}]}`
	u32 := func(k string, v uint32) gguf.KV { return gguf.Uint32KV("tokenizer.ggml."+k, v) }
	flag := func(k string, v bool) gguf.KV {
		return gguf.KV{Key: "tokenizer.ggml." + k, Value: gguf.Value{Type: gguf.TypeBool, V: v}}
	}
	tmpl := func(s string) gguf.KV { return gguf.StringKV("tokenizer.chat_template", s) }
	tests := []struct {
		name      string
		post      string            // tokenizer.json's post_processor
		tokConfig string            // tokenizer_config.json; "" none
		config    string            // config.json
		files     map[string]string // other files in the directory
		want      []gguf.KV
	}{
		{"config's tokens and template", bosFirst,
			`{"bos_token": "<s>", "eos_token": {"content": "<|eot|>"}, "pad_token": "<pad>", "chat_template": "T"}`, `{"eos_token_id": [1, 2]}`, nil,
			[]gguf.KV{u32("bos_token_id", 0), u32("eos_token_id", 2), u32("padding_token_id", 3), flag("add_bos_token", true), tmpl("T")}},
		{"tokenizer_config overrides the template", bosFirst,
			`{"bos_token": "<s>", "add_bos_token": false, "add_eos_token": true}`, `{}`, nil,
			[]gguf.KV{u32("bos_token_id", 0), flag("add_bos_token", false), flag("add_eos_token", true)}},
		{"config.json's integer ids fill in", `null`,
			`{"eos_token": "</s>"}`, `{"bos_token_id": 0, "eos_token_id": 2, "pad_token_id": 3}`, nil,
			[]gguf.KV{u32("eos_token_id", 1), u32("bos_token_id", 0), u32("padding_token_id", 3)}},
		{"a template ending in another token: EOT", `{"type": "Sequence", "processors": [{"type": "ByteLevel"},
			{"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>"}}, {"Sequence": {"id": "A"}}, {"SpecialToken": {"id": "</s>"}}]}]}`,
			`{"bos_token": "<s>", "eos_token": "<|eot|>"}`, `{}`, nil,
			[]gguf.KV{u32("bos_token_id", 0), u32("eos_token_id", 1), u32("eot_token_id", 2), flag("add_bos_token", true), flag("add_eos_token", true)}},
		{"no tokenizer_config: the template's flags, config.json's ids", bosFirst,
			"", `{"bos_token_id": 0, "eos_token_id": 1}`, nil,
			[]gguf.KV{u32("bos_token_id", 0), u32("eos_token_id", 1), flag("add_bos_token", true)}},
		{"chat_template.jinja", `null`,
			`{"eos_token": "</s>"}`, `{}`, map[string]string{"chat_template.jinja": "J"},
			[]gguf.KV{u32("eos_token_id", 1), tmpl("J")}},
		{"named templates: the default", `null`,
			`{"chat_template": [{"name": "tool_use", "template": "U"}, {"name": "default", "template": "D"}]}`, `{}`, nil,
			[]gguf.KV{tmpl("D")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			write := func(name, s string) { require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644)) }
			write("config.json", tc.config)
			if tc.tokConfig != "" {
				write("tokenizer_config.json", tc.tokConfig)
			}
			for name, s := range tc.files {
				write(name, s)
			}
			var tj tokenizerJSON
			require.NoError(t, json.Unmarshal([]byte(`{"added_tokens": `+added+`, "post_processor": `+tc.post+`}`), &tj))
			cfg, err := readTokenizerConfig(dir)
			require.NoError(t, err)
			got, err := specialVocab(dir, &tj, cfg, 4, true)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}
