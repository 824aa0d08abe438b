package main

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const peerGGUF = "../../testdata/tokenizer/ggml-vocab-gpt-2.gguf"

// runSub runs one command built by its constructor, as the root would.
func runSub(t *testing.T, cmd *cobra.Command, args ...string) (stdout string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err = cmd.ExecuteContext(context.Background())
	return out.String(), err
}

func TestInspectPeerFile(t *testing.T) {
	out, err := runSub(t, newInspectCmd(), peerGGUF)
	require.NoError(t, err)
	for _, want := range []string{
		"version:    3", "alignment:  32", "16 metadata keys:",
		`│ general.architecture              │ string        │ "gpt2"`,
		"│ gpt2.attention.layer_norm_epsilon │ float32       │ 1e-05",
		`│ tokenizer.ggml.tokens             │ [50257]string │ ["!", "\"", "#", "$", "%", "&", "'", "(", … 50249 more]`,
		"│ tokenizer.ggml.token_type         │ [50257]int32  │ [1, 1, 1, 1, 1, 1, 1, 1, … 50249 more]",
		"0 tensors:",
	} {
		assert.Contains(t, out, want)
	}
}

func TestInspectConverted(t *testing.T) {
	path := convertTiny(t, t.TempDir(), "q8_0")
	out, err := runSub(t, newInspectCmd(), path)
	require.NoError(t, err)
	for _, want := range []string{
		"29 tensors:",
		"│ token_embd.weight        │ Q8_0 │ [64 50257] │ 3216448  │",
		"│ position_embd.weight     │ F32  │ [64 128]   │ 8192     │",
		"│ blk.0.attn_qkv.weight    │ Q8_0 │ [64 192]   │ 12288    │",
		"│ blk.1.ffn_down.weight    │ Q8_0 │ [256 64]   │ 16384    │",
		"│ output_norm.bias         │ F32  │ [64]       │ 64       │",
		`│ llorch.source.sha256              │ string        │ "711a5255f8d4b73e213cb8b10e4549b53bc08fe147c8c9d6d12f72fa05996a34"`,
	} {
		assert.Contains(t, out, want)
	}
}

func TestInspectErrors(t *testing.T) {
	_, err := runSub(t, newInspectCmd(), filepath.Join(t.TempDir(), "missing.gguf"))
	assert.ErrorContains(t, err, "no such file")
	_, err = runSub(t, newInspectCmd(), "../../testdata/tiny-gpt2/config.json")
	assert.ErrorContains(t, err, "bad magic")
	_, err = runSub(t, newInspectCmd())
	assert.ErrorContains(t, err, "accepts 1 arg(s)")
}
