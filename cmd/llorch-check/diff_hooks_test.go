package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/checkpoints"
	"github.com/llorch/llorch-check/internal/fixture"
)

// TestDiffHooksDump: a partial dump written by pytorch/dump_hooks.py from a
// PyTorch module passes diff against the reference set, and with a planted
// bug diff names the tensor where it enters, first in forward order.
func TestDiffHooksDump(t *testing.T) {
	if exec.Command("/usr/bin/python3", "-c", "import torch, numpy").Run() != nil {
		// As make test: the PyTorch steps need Debian's torch; CI has it.
		require.NotEqual(t, "true", os.Getenv("CI"), "dump_hooks.py needs /usr/bin/python3 with torch")
		t.Skip("needs /usr/bin/python3 with torch and numpy")
	}
	for _, tc := range []struct {
		fault string
		code  int
		first string // the first failing tensor, "name@layer"
	}{
		{"", exitOK, ""},
		{"erf-gelu", exitFailed, "gelu@0"},
	} {
		t.Run("fault="+tc.fault, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "dump")
			args := []string{filepath.Join(fixture.Root(), "pytorch", "dump_hooks.py"), "--model", fixture.TinyModel(),
				"--baseline", fixture.TinyReferences(), "--out", out, "--impl", "standin"}
			if tc.fault != "" {
				args = append(args, "--inject-fault", tc.fault)
			}
			b, err := exec.Command("/usr/bin/python3", args...).CombinedOutput()
			require.NoError(t, err, "%s", b)
			code, stdout, stderr := runCLI(t, "diff", "--format", "json", fixture.TinyReferences(), out)
			require.Equal(t, tc.code, code, stderr)
			var rep checkpoints.Report
			require.NoError(t, json.Unmarshal([]byte(stdout), &rep))
			require.NotEmpty(t, rep.NotDumped, "the dump is partial and the report says what it lacks")
			if tc.first == "" {
				require.True(t, rep.Passed)
				return
			}
			f := rep.FirstFailure()
			require.NotNil(t, f)
			require.Equal(t, tc.first, f.Name+"@"+layerOf(f))
		})
	}
}

func layerOf(r *checkpoints.Result) string {
	if r.Layer == nil {
		return "-"
	}
	return strconv.Itoa(*r.Layer)
}
