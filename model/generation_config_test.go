package model

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture"
)

// TestGenerationConfigEOS: generation_config.json's eos_token_id (an id or
// a list, as Llama 3.1 and Qwen2.5 ship it) joins config.json's, which
// stays first; a malformed file or an id outside the vocabulary is an
// error naming the file.
func TestGenerationConfigEOS(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		want       []int
		err        string
	}{
		{"absent", "", []int{2}, ""},
		{"list", `{"bos_token_id": 1, "eos_token_id": [2, 128, 129], "do_sample": true}`, []int{2, 128, 129}, ""},
		{"one id", `{"eos_token_id": 7}`, []int{2, 7}, ""},
		{"no eos field", `{"temperature": 0.6}`, []int{2}, ""},
		{"not JSON", `{"eos_token_id": [`, nil, "generation_config.json: not a JSON object"},
		{"not an id", `{"eos_token_id": "2"}`, nil, `generation_config.json: field "eos_token_id"`},
		{"outside the vocabulary", `{"eos_token_id": [2, 32000]}`, nil, "id 32000 is outside the vocabulary of 32000 tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			fixture.CopyFile(t, filepath.Join(fixture.FamilyModel("tiny-llama3"), "config.json"), filepath.Join(dir, "config.json"))
			if tc.file != "" {
				require.NoError(t, os.WriteFile(filepath.Join(dir, GenerationConfigFile), []byte(tc.file), 0o644))
			}
			c, err := LoadConfig(filepath.Join(dir, "config.json"))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				require.ErrorContains(t, err, dir)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, c.EOSTokens())
			require.Equal(t, 2, c.EOSTokenID, "config.json's id stays the first")
		})
	}
}
