package tokenizer

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
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

// TestConvertKeys: GPT-2's keys are built from the vocabulary files; the
// Llama family's are a tokenizer GGUF's, given or the first in the
// directory (by name) that has them; a directory without one, a file
// without them and a vocabulary of another size are errors naming them.
func TestConvertKeys(t *testing.T) {
	gpt2Dir := filepath.Join("..", "testdata", "gpt2-vocab")
	vocab := filepath.Join("..", "testdata", "tokenizer", "llama-spm", "ggml-vocab-llama-spm.gguf")
	llamaKeys, err := FileGGUFKeys(vocab)
	require.NoError(t, err)
	n := 0
	for _, e := range llamaKeys {
		if e.Key == "tokenizer.ggml.tokens" {
			n = e.Value.V.(gguf.Array).Len()
		}
	}
	require.Positive(t, n)
	gpt2Keys, err := GGUFKeys(gpt2Dir, 50257)
	require.NoError(t, err)

	bare := t.TempDir() // a.gguf has no tokenizer keys
	require.NoError(t, gguf.WriteFile(filepath.Join(bare, "a.gguf"), []gguf.KV{gguf.StringKV("general.architecture", "llama")}, nil))
	found := t.TempDir() // a.gguf bare, then b.gguf the vocabulary
	require.NoError(t, gguf.WriteFile(filepath.Join(found, "a.gguf"), []gguf.KV{gguf.StringKV("general.architecture", "llama")}, nil))
	b, err := os.ReadFile(vocab)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(found, "b.gguf"), b, 0o644))

	for _, c := range []struct {
		name, dir, from string
		vocab           int
		llama           bool
		want            []gguf.KV
		err             string
	}{
		{"gpt2", gpt2Dir, "", 50257, false, gpt2Keys, ""},
		{"gpt2 other size", gpt2Dir, "", 50000, false, nil, "the model's vocabulary is 50000"},
		{"llama given", bare, vocab, n, true, llamaKeys, ""},
		{"llama found", found, "", n, true, llamaKeys, ""},
		{"llama none", bare, "", n, true, nil, bare + " has no tokenizer: neither tokenizer.json nor a tokenizer GGUF"},
		{"llama not a tokenizer", found, filepath.Join(found, "a.gguf"), n, true, nil, "a.gguf: no tokenizer.ggml.tokens"},
		{"llama other size", found, "", n + 1, true, nil, "b.gguf: " + strconv.Itoa(n) + " tokens, the model's vocabulary is " + strconv.Itoa(n+1)},
	} {
		got, err := ConvertKeys(c.dir, c.from, c.vocab, c.llama)
		if c.err != "" {
			require.ErrorContains(t, err, c.err, c.name)
			continue
		}
		require.NoError(t, err, c.name)
		require.Equal(t, c.want, got, c.name)
	}
}
