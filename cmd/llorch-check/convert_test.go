package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/tokenizer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// convertTiny converts the default tiny model with --type typ into dir.
func convertTiny(t *testing.T, dir, typ string) string {
	t.Helper()
	out := filepath.Join(dir, "tiny-"+typ+".gguf")
	stdout, err := runSub(t, newConvertCmd(), "--to", "gguf", "--type", typ, fixture.TinyModel(), out)
	require.NoError(t, err)
	require.Contains(t, stdout, "wrote "+out)
	return out
}

// HF → GGUF → run: F32 and F16 (lossless from the F16 tiny model) pass all
// twelve checkpoints at the default tolerances; Q8_0 against its source's
// references is a cost report (make verify-gguf proves it on its own).
func TestConvertThenRun(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		typ, want string
		cost      bool
	}{
		{"f32", "PASS: 124 checks passed, 0 failed", false},
		{"f16", "PASS: 124 checks passed, 0 failed", false},
		{"q8_0", "COST REPORT (not a validation): ", true},
	} {
		t.Run(c.typ, func(t *testing.T) {
			path := convertTiny(t, dir, c.typ)
			code, out, stderr := runCLI(t, "run", "--model", path, "--references", fixture.TinyReferences())
			require.Equal(t, exitOK, code, out+stderr)
			assert.Contains(t, out, c.want)
			assert.Contains(t, out, "model:      "+path)
			assert.Contains(t, out, "weights:    converted from the reference's weights")
			if c.cost {
				assert.Contains(t, out, "cost:       a COST REPORT, not a validation")
			} else {
				assert.NotContains(t, out, "cost:")
			}
		})
	}
}

// The converted file carries every key llama.cpp's own GPT-2 file has, and
// its tokenizer tokenizes exactly as the HF files it came from.
func TestConvertMetadata(t *testing.T) {
	path := convertTiny(t, t.TempDir(), "f16")
	f, err := gguf.Open(path)
	require.NoError(t, err)
	defer f.Close()
	peer, err := gguf.Open(peerGGUF)
	require.NoError(t, err)
	defer peer.Close()
	for _, kv := range peer.KV {
		got, ok := f.Get(kv.Key)
		if assert.True(t, ok, "missing key %s", kv.Key) {
			assert.Equal(t, kv.Value.Type, got.Type, kv.Key)
		}
	}
	for key, want := range map[string]any{
		"general.architecture": "gpt2", "gpt2.context_length": uint32(128), "gpt2.embedding_length": uint32(64),
		"gpt2.block_count": uint32(2), "gpt2.attention.head_count": uint32(4), "gpt2.feed_forward_length": uint32(256),
		"gpt2.attention.layer_norm_epsilon": float32(1e-5), "general.file_type": uint32(1), "general.name": "tiny-gpt2",
		"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "gpt-2", "tokenizer.ggml.eos_token_id": uint32(50256),
		"llorch.source.dtype": "F16",
	} {
		v, ok := f.Get(key)
		require.True(t, ok, key)
		assert.Equal(t, want, v.V, key)
	}
	sha, err := f.String(model.KeySourceSHA256)
	require.NoError(t, err)
	assert.Len(t, sha, 64)
	types, err := f.Ints("tokenizer.ggml.token_type")
	require.NoError(t, err)
	assert.EqualValues(t, 3, types[50256], "<|endoftext|> is a control token")

	fromGGUF, err := tokenizer.FromGGUF(f)
	require.NoError(t, err)
	fromHF, err := tokenizer.Load(fixture.TinyModel())
	require.NoError(t, err)
	for _, s := range []string{"Hello, world!", " 'll've <|endoftext|>  multiple   spaces\n", "naïve café 日本語 🎉"} {
		assert.Equal(t, fromHF.Encode(s), fromGGUF.Encode(s), s)
		assert.Equal(t, fromHF.EncodeSpecial(s), fromGGUF.EncodeSpecial(s), s)
	}

	m, err := modelFlags{path: path, weightDType: "f32"}.load(context.Background())
	require.NoError(t, err)
	tok, err := tokenizer.ForModel(m.Path())
	require.NoError(t, err)
	require.NotNil(t, tok, "a GGUF model's tokenizer is its own metadata")
	assert.Equal(t, []int{15496, 13}, tok.Encode("Hello."))
}

func TestConvertErrors(t *testing.T) {
	dir := t.TempDir()
	gg := convertTiny(t, dir, "f32")
	noVocab := t.TempDir()
	for _, f := range []string{"config.json", "model.safetensors"} {
		b, err := os.ReadFile(filepath.Join(fixture.TinyModel(), f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(noVocab, f), b, 0o644))
	}
	out := filepath.Join(dir, "out.gguf")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no --to", []string{fixture.TinyModel(), out}, `required flag(s) "to" not set`},
		{"other format", []string{"--to", "onnx", fixture.TinyModel(), out}, `--to "onnx": only gguf`},
		{"other type", []string{"--to", "gguf", "--type", "q4_0", fixture.TinyModel(), out}, `--type "q4_0": want f32, f16, bf16 or q8_0`},
		{"GGUF input", []string{"--to", "gguf", gg, out}, "is already GGUF"},
		{"missing dir", []string{"--to", "gguf", filepath.Join(dir, "nope"), out}, "config.json"},
		{"no tokenizer", []string{"--to", "gguf", noVocab, out}, "GGUF conversion needs vocab.json and merges.txt"},
		{"output dir missing", []string{"--to", "gguf", fixture.TinyModel(), filepath.Join(dir, "no", "x.gguf")}, "x.gguf"},
		{"one arg", []string{"--to", "gguf", fixture.TinyModel()}, "accepts 2 arg(s)"},
		{"output is a directory", []string{"--to", "gguf", fixture.TinyModel(), dir}, "is a directory"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := runSub(t, newConvertCmd(), c.args...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			_, statErr := os.Stat(out)
			assert.True(t, os.IsNotExist(statErr), "no output after a failed convert")
		})
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		assert.False(t, strings.Contains(e.Name(), ".tmp-"), "temporary file %s left behind", e.Name())
	}
}

// TestConvertKeepsUsersFiles: convert never replaces its own input (once
// it overwrote model.safetensors with a GGUF) and replaces another existing
// file only with --force.
func TestConvertKeepsUsersFiles(t *testing.T) {
	model := fixture.CopyDir(t, fixture.TinyModel())
	weights := filepath.Join(model, "model.safetensors")
	before, err := os.ReadFile(weights)
	require.NoError(t, err)
	for _, args := range [][]string{
		{"--to", "gguf", model, weights},
		{"--to", "gguf", "--force", model, weights},
		{"--to", "gguf", "--force", model, filepath.Join(model, "new.gguf")},
		{"--to", "gguf", "--force", model + "/.", filepath.Join(model, "sub", "..", "config.json")},
	} {
		_, err := runSub(t, newConvertCmd(), args...)
		require.ErrorContains(t, err, "inside the input model directory", "%v", args)
	}
	after, err := os.ReadFile(weights)
	require.NoError(t, err)
	require.Equal(t, before, after, "the input weights are untouched")
	_, err = os.Stat(filepath.Join(model, "new.gguf"))
	require.True(t, os.IsNotExist(err))

	out := filepath.Join(t.TempDir(), "mine.gguf")
	require.NoError(t, os.WriteFile(out, []byte("a user's file"), 0o644))
	_, err = runSub(t, newConvertCmd(), "--to", "gguf", model, out)
	require.ErrorContains(t, err, "exists; --force replaces it")
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	require.Equal(t, "a user's file", string(b))
	_, err = runSub(t, newConvertCmd(), "--to", "gguf", "--force", model, out)
	require.NoError(t, err)
}

// A convert that cannot finish writing (here the file-size limit, as a
// full disk would) leaves no output file, only a hidden temporary twin
// that the next convert of the same path removes; the next convert
// succeeds. Convert streams tensors into the file, so a failure comes
// after much of it is written.
func TestConvertInterruptedLeavesNoFile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "out.gguf")
	src := fixture.FamilyModel("tiny-llama")
	cmd := exec.Command("bash", "-c", `ulimit -f 64 && exec "$0" convert --to gguf --type f32 --tokenizer "$1" "$2" "$3"`,
		bin, familyVocab("tiny-llama"), src, out)
	msg, err := cmd.CombinedOutput()
	require.Error(t, err, "a 64 KiB limit stops the write: %s", msg)
	_, err = os.Stat(out)
	require.True(t, os.IsNotExist(err), "no output after a failed write")

	_, err = runSub(t, newConvertCmd(), "--to", "gguf", "--type", "f32", "--tokenizer", familyVocab("tiny-llama"), src, out)
	require.NoError(t, err)
	fi, err := os.Stat(out)
	require.NoError(t, err)
	require.Greater(t, fi.Size(), int64(64<<10), "the limit did cut the file short")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "the interrupted twin is gone: %v", entries)
}
