package tokenizer

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/gguf"
)

// jsonModelDir lays out an HF directory holding testdata/tokenizer/name's
// real tokenizer.json and tokenizer_config.json, and a config.json with
// the given extra fields.
func jsonModelDir(t *testing.T, name string, config string) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(llamaTestdata, name)
	var data []byte
	if _, err := os.Stat(filepath.Join(src, "tokenizer.json")); err == nil {
		data, err = os.ReadFile(filepath.Join(src, "tokenizer.json"))
		require.NoError(t, err)
	} else {
		data = gunzip(t, filepath.Join(src, "tokenizer.json.gz"))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tokenizer.json"), data, 0o644))
	cfg, err := os.ReadFile(filepath.Join(src, "tokenizer_config.json"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), cfg, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), []byte(config), 0o644))
	return dir
}

// keysGGUF writes tokenizer keys as a vocabulary-only GGUF and opens it.
func keysGGUF(t *testing.T, kv []gguf.KV) *gguf.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "vocab.gguf")
	require.NoError(t, gguf.WriteFile(path, append([]gguf.KV{gguf.StringKV("general.architecture", "llama")}, kv...), nil))
	f, err := gguf.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

// A real tokenizer.json converted to GGUF keys (model, pre-tokenizer,
// tokens, types, scores or merges, special ids, add_bos, chat template,
// padding past the tokenizer to the model's vocabulary) loads back
// through the GGUF loader and tokenizes every test vector id for id, as
// the tokenizer.json loader does, special tokens included.
func TestJSONGGUFKeys(t *testing.T) {
	cases := []struct {
		name, vectors string
		tokens        int // the tokenizer's own
		model, pre    string
		bos, eos      int // the keys' (tokenizer_config.json's or config.json's)
		addBOS        any // add_bos_token, nil: not written
		template      bool
	}{
		// This tokenizer.json's post-processor is ByteLevel alone: no
		// template says to add BOS (llama.cpp adds it for llama-bpe).
		{"llama-bpe", "llama-bpe/ggml-vocab-llama-bpe.gguf", 128256, "gpt2", "llama-bpe", 128000, 128001, nil, true},
		{"qwen2", "qwen2/ggml-vocab-qwen2.gguf", 151669, "gpt2", "qwen2", 151643, 151645, false, true},
		{"mistral-hf", "mistral-hf/vectors", 32000, "llama", "default", 1, 2, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			const pad = 7 // embedding rows past the tokenizer, as Qwen2.5's and Phi-3's
			vocab := c.tokens + pad
			dir := jsonModelDir(t, c.name, fmt.Sprintf(`{"vocab_size": %d, "bos_token_id": %d}`, vocab, c.bos))
			kv, err := JSONGGUFKeys(dir, vocab)
			require.NoError(t, err)
			f := keysGGUF(t, kv)

			str := func(key string) string {
				s, err := f.String(key)
				require.NoError(t, err, key)
				return s
			}
			assert.Equal(t, c.model, str("tokenizer.ggml.model"))
			assert.Equal(t, c.pre, str("tokenizer.ggml.pre"))
			tokens, err := f.Strings("tokenizer.ggml.tokens")
			require.NoError(t, err)
			require.Len(t, tokens, vocab)
			types, err := f.Ints("tokenizer.ggml.token_type")
			require.NoError(t, err)
			for id := c.tokens; id < vocab; id++ {
				assert.Equal(t, fmt.Sprintf("[PAD%d]", id), tokens[id])
				assert.EqualValues(t, ggufTokenUnused, types[id])
			}
			for key, want := range map[string]int{"tokenizer.ggml.bos_token_id": c.bos, "tokenizer.ggml.eos_token_id": c.eos} {
				got, err := f.Int(key)
				require.NoError(t, err, key)
				assert.EqualValues(t, want, got, key)
			}
			add, ok := f.Get("tokenizer.ggml.add_bos_token")
			if c.addBOS == nil {
				assert.False(t, ok)
			} else {
				require.True(t, ok)
				assert.Equal(t, c.addBOS, add.V)
			}
			_, ok = f.Get("tokenizer.chat_template")
			assert.Equal(t, c.template, ok)
			_, merges := f.Get("tokenizer.ggml.merges")
			_, scores := f.Get("tokenizer.ggml.scores")
			assert.Equal(t, c.model == "gpt2", merges)
			assert.Equal(t, c.model == "llama", scores)

			tok, err := FromGGUF(f)
			require.NoError(t, err)
			assert.Equal(t, vocab, tok.VocabSize())
			fromJSON := llamaTok(t, c.name)
			inputs, want := readVectors(t, c.vectors)
			for i, in := range inputs {
				assert.Equal(t, want[i], nonNil(tok.Encode(in)), "case %d %q", i, in)
			}
			if c.addBOS != nil {
				bos, addBOS := tok.BOS()
				jb, jadd := fromJSON.BOS()
				assert.Equal(t, jadd, addBOS, "BOS added alike")
				assert.Equal(t, c.addBOS, addBOS)
				if jadd {
					assert.Equal(t, jb, bos)
				}
			}
			for _, s := range []string{"<|begin_of_text|>Hi<|eot_id|>", "<|im_start|>user\nHi<|im_end|>", "<s>[INST] Hi [/INST]</s>", " <unk> x"} {
				assert.Equal(t, fromJSON.EncodeSpecial(s), tok.EncodeSpecial(s), "%q", s)
			}
		})
	}
}

// What cannot be converted is refused, naming the file.
func TestJSONGGUFKeysErrors(t *testing.T) {
	dir := jsonModelDir(t, "mistral-hf", `{}`)
	_, err := JSONGGUFKeys(dir, 31999)
	require.ErrorContains(t, err, "tokenizer.json: 32000 tokens (ids up to 31999), the model's vocabulary is 31999")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(`{"model": {"type": "Unigram"}}`), 0o644))
	_, err = JSONGGUFKeys(dir, 32000)
	require.ErrorContains(t, err, "tokenizer.json: unsupported model type Unigram")

	require.NoError(t, os.Remove(filepath.Join(dir, "tokenizer.json")))
	_, err = JSONGGUFKeys(dir, 32000)
	require.ErrorContains(t, err, "tokenizer.json")
}
