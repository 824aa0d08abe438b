package main

import (
	"bytes"
	"context"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/gguf"
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

// TestInspectLongArrays: a metadata array prints its first elements and
// how many more, and formatting it costs memory for those only (printing
// a whole uint8 array once took ~24 bytes per element).
func TestInspectLongArrays(t *testing.T) {
	const n = 4 << 20
	vals := make([]uint8, n)
	for i := range vals {
		vals[i] = uint8(i)
	}
	arr := gguf.Value{Type: gguf.TypeArray, V: gguf.Array{Elem: gguf.TypeUint8, Values: vals}}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	s := valueString(arr.V)
	runtime.ReadMemStats(&after)
	require.Equal(t, "[0, 1, 2, 3, 4, 5, 6, 7, … 4194296 more]", s)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<10))
	require.Equal(t, "[1.5, -2]", valueString(gguf.Array{Elem: gguf.TypeFloat32, Values: []float32{1.5, -2}}))
}
