package main

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture"
)

// nanModel copies the tiny model with element 5 of h.0.ln_1.weight set to
// NaN, and the reference set re-pointed at the new weights' sha256: a
// model whose forward produces NaN, against references it must be
// compared with.
func nanModel(t *testing.T) (model, refs string) {
	t.Helper()
	model, refs = fixture.CopyDir(t, fixture.TinyModel()), fixture.CopyDir(t, fixture.TinyReferences())
	p := filepath.Join(model, "model.safetensors")
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	n := binary.LittleEndian.Uint64(b)
	var header map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(b[8:8+n], &header))
	var info struct {
		DType   string  `json:"dtype"`
		Offsets []int64 `json:"data_offsets"`
	}
	require.NoError(t, json.Unmarshal(header["h.0.ln_1.weight"], &info))
	require.Equal(t, "F16", info.DType)
	at := 8 + int64(n) + info.Offsets[0] + 2*5
	binary.LittleEndian.PutUint16(b[at:], 0x7e00) // float16 NaN
	require.NoError(t, os.WriteFile(p, b, 0o644))
	sum := sha256.Sum256(b)
	fixture.EditJSON(t, filepath.Join(refs, "manifest.json"), func(m map[string]any) {
		m["model"].(map[string]any)["weights_sha256"] = hex.EncodeToString(sum[:])
	})
	return model, refs
}

// TestNaNIsAFailedCheckpoint: a NaN in the forward pass is what the tool
// exists to localise. It is a failed checkpoint (exit 1) with a report in
// every format, and bisect names the first non-finite tensor; never
// exit 2, which says the input was bad.
func TestNaNIsAFailedCheckpoint(t *testing.T) {
	model, refs := nanModel(t)
	args := modelArgs(model, refs)
	for _, format := range []string{"table", "json"} {
		code, stdout, stderr := runCLI(t, append([]string{"run", "--format", format}, args...)...)
		require.Equal(t, exitFailed, code, "format %s: %s", format, stderr)
		if format == "json" {
			var doc map[string]any
			require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
			require.Equal(t, false, doc["passed"])
		} else {
			require.True(t, strings.HasPrefix(lastLine(stdout), "FAIL:"), lastLine(stdout))
		}
	}
	code, stdout, stderr := runCLI(t, append([]string{"bisect"}, args...)...)
	require.Equal(t, exitFailed, code, stderr)
	require.Contains(t, stdout, "checkpoint 1 (Norm), layer 0, tensor ln_1")
	require.Contains(t, stdout, "NaN")
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
