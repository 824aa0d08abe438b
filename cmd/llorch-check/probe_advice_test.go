package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/checkpoints"
	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/probe"
)

// TestProbeAdviceRunsAsPrinted: the bisect command probe prints against a
// faulty server runs as printed once the dump it asks for is where it
// says: bash reads the line (a path with spaces, parentheses and a quote;
// the built-in set outside a clone, whose copy has no path to paste) and
// the words it gives make bisect find the fault.
func TestProbeAdviceRunsAsPrinted(t *testing.T) {
	base, stop := startServe(t, "--inject-fault", "attn-scale")
	defer stop()
	odd := filepath.Join(t.TempDir(), "refs (copy) it's")
	require.NoError(t, os.CopyFS(odd, os.DirFS(fixture.TinyReferences())))
	// One cache for the test: the process finds the built-in copies once.
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	saved := builtin.dirs
	builtin.dirs = nil // copies another test made elsewhere
	t.Cleanup(func() { builtin.dirs = saved })
	for _, tc := range []struct {
		name string
		refs []string // probe's and dump's --references
	}{
		{"a path a shell splits", []string{"--references", odd}},
		{"the built-in default, outside a clone", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			args := append([]string{"probe", "--endpoint", base, "--format", "json", "--invariance=false"}, tc.refs...)
			code, out, stderr := runCLI(t, args...)
			require.Equal(t, exitFailed, code, stderr)
			var rep checkpoints.Report
			require.NoError(t, json.Unmarshal([]byte(out), &rep))
			require.NotEmpty(t, rep.Next)
			_, line, ok := strings.Cut(rep.Next[len(rep.Next)-1], "and run: ")
			require.True(t, ok, "no command in %q", rep.Next[len(rep.Next)-1])

			// The engine's activations, where the advice asks for them.
			dump := append([]string{"dump", "--out", probe.DumpDir, "--model", fixture.TinyModel(), "--inject-fault", "attn-scale"}, tc.refs...)
			code, _, stderr = runCLI(t, dump...)
			require.Equal(t, exitOK, code, stderr)

			words := shellWords(t, line)
			require.Equal(t, "llorch-check", words[0], line)
			code, out, stderr = runCLI(t, words[1:]...)
			require.Equal(t, exitFailed, code, "%s\n%s%s", line, out, stderr)
			require.Contains(t, out, "first failure: checkpoint ", line)
		})
	}
}

// shellWords is how bash splits line into a command's words: line runs
// with the command stood in for by a function printing its arguments.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	script := `llorch-check() { printf '%s\0' "$@"; }; ` + line
	out, err := exec.Command("bash", "-c", script).Output()
	var stderr []byte
	if ee, ok := err.(*exec.ExitError); ok {
		stderr = ee.Stderr
	}
	require.NoError(t, err, "bash cannot run %q: %s", line, stderr)
	words := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	require.NotEmpty(t, bytes.TrimSpace(out), "bash ran no command from %q", line)
	return append([]string{"llorch-check"}, words...)
}
