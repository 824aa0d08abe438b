package tokenizer

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/gguf"
)

// TestGGUFKeysRoundTrip: the keys convert writes load back through
// FromGGUF as the same tokenizer as the HF files.
func TestGGUFKeysRoundTrip(t *testing.T) {
	dir := filepath.Join("..", "testdata", "gpt2-vocab")
	kv, err := GGUFKeys(dir, 50257)
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, gguf.Write(&buf, append([]gguf.KV{gguf.StringKV("general.architecture", "gpt2")}, kv...), nil))
	f, err := gguf.ReadBytes(buf.Bytes())
	require.NoError(t, err)
	fromGGUF, err := FromGGUF(f)
	require.NoError(t, err)
	fromFiles, err := Load(dir)
	require.NoError(t, err)
	for _, text := range []string{"Hello, world!", " naïve 🤖 tokens<|endoftext|>x", "\n\n  spaces\t"} {
		require.Equal(t, fromFiles.Encode(text), fromGGUF.Encode(text), text)
	}
	id, ok := f.Get("tokenizer.ggml.unknown_token_id")
	require.True(t, ok)
	require.EqualValues(t, 50256, id.V)
}

func TestGGUFKeysErrors(t *testing.T) {
	src := filepath.Join("..", "testdata", "gpt2-vocab")
	vocab, err := os.ReadFile(filepath.Join(src, "vocab.json"))
	require.NoError(t, err)
	for _, c := range []struct {
		name  string
		files map[string]string
		size  int
		want  string
	}{
		{"no merges", map[string]string{"vocab.json": string(vocab)}, 50257, "needs vocab.json and merges.txt"},
		{"no vocab", map[string]string{"merges.txt": "#version: 0.2\na b\n"}, 50257, "needs vocab.json and merges.txt"},
		{"vocabulary size", map[string]string{"vocab.json": string(vocab), "merges.txt": "a b\n"}, 50000, "the model's vocabulary is 50000"},
		{"hole in the ids", map[string]string{"vocab.json": `{"a": 0, "b": 2}`, "merges.txt": "a b\n"}, 3, "each once"},
		{"bad merge", map[string]string{"vocab.json": `{"a": 0, "b": 1}`, "merges.txt": "a b c\n"}, 2, "merges.txt:1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, body := range c.files {
				require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
			}
			_, err := GGUFKeys(dir, c.size)
			require.ErrorContains(t, err, c.want)
		})
	}
}

// TestForModel: a GGUF model's tokenizer is its own file's, never the
// directory's files; an HF model's is its directory's; none is nil.
func TestForModel(t *testing.T) {
	src := filepath.Join("..", "testdata", "gpt2-vocab")
	dir := t.TempDir()
	for _, name := range []string{"vocab.json", "merges.txt"} {
		b, err := os.ReadFile(filepath.Join(src, name))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o644))
	}
	bare := filepath.Join(dir, "bare.gguf")
	require.NoError(t, gguf.WriteFile(bare, []gguf.KV{gguf.StringKV("general.architecture", "gpt2")}, nil))
	kv, err := GGUFKeys(src, 50257)
	require.NoError(t, err)
	withTok := filepath.Join(dir, "tok.gguf")
	require.NoError(t, gguf.WriteFile(withTok, append([]gguf.KV{gguf.StringKV("general.architecture", "gpt2")}, kv...), nil))

	tok, err := ForModel(bare)
	require.NoError(t, err)
	require.Nil(t, tok, "the directory's vocab.json is not the GGUF model's tokenizer")
	tok, err = ForModel(withTok)
	require.NoError(t, err)
	require.NotNil(t, tok)
	tok, err = ForModel(dir)
	require.NoError(t, err)
	require.NotNil(t, tok)
	tok, err = ForModel(t.TempDir())
	require.NoError(t, err)
	require.Nil(t, tok)
	_, err = ForModel(filepath.Join(dir, "absent"))
	require.ErrorContains(t, err, "absent", "a path not there is an error naming it")
}
