package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/internal/regularfile"
)

// TemplateFile is the file beside tokenizer_config.json in which newer
// Hugging Face repositories keep the chat template; transformers prefers
// it to the config's chat_template.
const TemplateFile = "chat_template.jinja"

// FromTokenizerConfig reads the chat template and the BOS and EOS tokens of
// a Hugging Face tokenizer_config.json, as transformers does: chat_template
// is a string or a list of {"name", "template"} (the one named "default" is
// taken), overridden by a chat_template.jinja beside the file; bos_token and
// eos_token are strings, null, or {"content": ...} objects. The Options it
// returns carry the tokens; set AddGenerationPrompt before Render. Without a
// template the error wraps ErrNoTemplate.
func FromTokenizerConfig(path string) (*Template, Options, error) {
	raw, err := regularfile.ReadFileMax(path, regularfile.MaxTokenizerConfig)
	if err != nil {
		return nil, Options{}, fmt.Errorf("chat: %w", err)
	}
	var cfg struct {
		ChatTemplate json.RawMessage `json:"chat_template"`
		BOSToken     json.RawMessage `json:"bos_token"`
		EOSToken     json.RawMessage `json:"eos_token"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, Options{}, fmt.Errorf("chat: %s: %w", path, err)
	}
	var opt Options
	if opt.BOSToken, err = configToken(cfg.BOSToken); err != nil {
		return nil, Options{}, fmt.Errorf("chat: %s: bos_token: %w", path, err)
	}
	if opt.EOSToken, err = configToken(cfg.EOSToken); err != nil {
		return nil, Options{}, fmt.Errorf("chat: %s: eos_token: %w", path, err)
	}
	src, from, err := configTemplate(path, cfg.ChatTemplate)
	if err != nil {
		return nil, Options{}, err
	}
	t, err := parse(src)
	if err != nil {
		return nil, Options{}, fmt.Errorf("%s: %w", from, err)
	}
	return t, opt, nil
}

// configTemplate returns the template source and where it came from, for
// errors: the chat_template.jinja beside path, or path's chat_template.
func configTemplate(path string, field json.RawMessage) (src, from string, err error) {
	jinjaPath := filepath.Join(filepath.Dir(path), TemplateFile)
	switch b, err := regularfile.ReadFileMax(jinjaPath, regularfile.MaxChatTemplate); {
	case err == nil:
		return string(b), "chat: " + jinjaPath, nil
	case !errors.Is(err, os.ErrNotExist):
		return "", "", fmt.Errorf("chat: %w", err)
	}
	from = path + ": chat_template"
	if len(field) == 0 || string(field) == "null" {
		return "", "", fmt.Errorf("%w: %s absent or null", ErrNoTemplate, from)
	}
	if err := json.Unmarshal(field, &src); err == nil {
		return src, "chat: " + from, nil
	}
	var named []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
	}
	if err := json.Unmarshal(field, &named); err != nil {
		return "", "", fmt.Errorf(`chat: %s: want a string or a list of {"name", "template"}`, from)
	}
	var names []string
	for _, n := range named {
		if n.Name == "default" {
			return n.Template, "chat: " + from + `["default"]`, nil
		}
		names = append(names, n.Name)
	}
	return "", "", fmt.Errorf("%w: %s has none named \"default\" (only %q)", ErrNoTemplate, from, names)
}

// configToken reads a special token of tokenizer_config.json: a string, an
// AddedToken object {"content": ...}, or null or absent ("").
func configToken(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var obj struct {
		Content *string `json:"content"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil || obj.Content == nil {
		return "", errors.New(`want a string, null or {"content": ...}`)
	}
	return *obj.Content, nil
}

// GGUF metadata keys FromGGUF reads.
const (
	KeyTemplate = "tokenizer.chat_template"
	keyTokens   = "tokenizer.ggml.tokens"
	keyBOS      = "tokenizer.ggml.bos_token_id"
	keyEOS      = "tokenizer.ggml.eos_token_id"
)

// FromGGUF reads the chat template of a GGUF file (tokenizer.chat_template)
// and its BOS and EOS tokens: the entries of tokenizer.ggml.tokens at
// tokenizer.ggml.bos_token_id and eos_token_id, "" when an id is absent.
// Without a template the error wraps ErrNoTemplate.
func FromGGUF(f *gguf.File) (*Template, Options, error) {
	src, err := f.String(KeyTemplate)
	if errors.Is(err, gguf.ErrNoKey) {
		return nil, Options{}, fmt.Errorf("%w: GGUF metadata has no %s", ErrNoTemplate, KeyTemplate)
	}
	if err != nil {
		return nil, Options{}, fmt.Errorf("chat: %w", err)
	}
	var opt Options
	if opt.BOSToken, err = ggufToken(f, keyBOS); err != nil {
		return nil, Options{}, err
	}
	if opt.EOSToken, err = ggufToken(f, keyEOS); err != nil {
		return nil, Options{}, err
	}
	t, err := parse(src)
	if err != nil {
		return nil, Options{}, fmt.Errorf("chat: GGUF %s: %w", KeyTemplate, err)
	}
	return t, opt, nil
}

// ggufToken returns the token whose id is at key, "" when key is absent.
func ggufToken(f *gguf.File, key string) (string, error) {
	id, err := f.Int(key)
	if errors.Is(err, gguf.ErrNoKey) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("chat: %w", err)
	}
	tokens, err := f.Strings(keyTokens)
	if err != nil {
		return "", fmt.Errorf("chat: GGUF %s: %w", key, err)
	}
	if id < 0 || id >= int64(len(tokens)) {
		return "", fmt.Errorf("chat: GGUF %s: id %d outside %s (%d tokens)", key, id, keyTokens, len(tokens))
	}
	return tokens[id], nil
}
