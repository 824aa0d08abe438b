package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestBuiltinDefaultsOutsideClone runs the command lines a user of an
// installed binary runs first, in a directory with no clone above it: the
// defaults are the binary's own, and run passes as make run does in a
// clone, naming them as built in.
func TestBuiltinDefaultsOutsideClone(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for d := dir; ; d = filepath.Dir(d) {
		_, err := os.Stat(filepath.Join(d, defaultModel))
		require.True(t, os.IsNotExist(err), "%s holds %s: not outside a clone", d, defaultModel)
		if filepath.Dir(d) == d {
			break
		}
	}
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)

	tests := []struct {
		args []string
		want []string // lines of stdout, in order
	}{
		{[]string{"run"}, []string{
			"model:      (built in) tiny-gpt2",
			"references: (built in) references/tiny-gpt2",
			"weights:    matrices held as float16",
			"PASS: 124 checks passed, 0 failed",
		}},
		{[]string{"run", "--checkpoint", "12", "--format", "json"}, []string{
			`"model": "(built in) tiny-gpt2",`,
			`"references": "(built in) references/tiny-gpt2",`,
		}},
		{[]string{"tokenize", "Hello world"}, []string{"15496 995"}},
		{[]string{"detokenize", "15496,995"}, []string{"Hello world"}},
		{[]string{"generate", "--prompt", "The ship left port", "--max-tokens", "8", "--temperature", "0"}, []string{
			" praying transporter Tower tomat Tower tomatlasses Harmon",
		}},
		{[]string{"serve", "--dry-run"}, []string{
			"dry-run: model (built in) tiny-gpt2/model.safetensors loaded (F16, 6 MB of weights), tokenizer and warm-up ok",
		}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, out, stderr := runCLI(t, tt.args...)
			require.Equal(t, exitOK, code, stderr)
			lines := strings.Split(out, "\n")
			for _, w := range tt.want {
				i := indexLine(lines, w)
				require.GreaterOrEqual(t, i, 0, "no line %q in\n%s", w, out)
				lines = lines[i+1:]
			}
			require.NotContains(t, out+stderr, cache, "a path of the copy is shown")
		})
	}

	// serve starts on the built-in model and answers.
	t.Run("serve", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cmd := newServeCmd()
		logs := &syncBuffer{}
		cmd.SetArgs([]string{"--port", "0"})
		cmd.SetOut(io.Discard)
		cmd.SetErr(logs)
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		errc := make(chan error, 1)
		go func() { errc <- cmd.ExecuteContext(ctx) }()
		base := "http://" + listenAddr(t, logs)
		require.Eventually(t, func() bool { return readyzStatus(base) == http.StatusOK }, 30*time.Second, 10*time.Millisecond, logs.String())
		resp, err := http.Post(base+"/tokenize", "application/json", strings.NewReader(`{"prompt":"Hello world"}`))
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
		require.Contains(t, string(body), `"tokens":[15496,995]`)

		// probe checks it against the built-in reference set.
		code, out, stderr := runCLI(t, "probe", "--endpoint", base)
		require.Equal(t, exitOK, code, out+stderr)
		require.Contains(t, out, "references: (built in) references/tiny-gpt2")
		require.NotContains(t, out+stderr, cache, "a path of the copy is shown")
		cancel()
		require.NoError(t, <-errc)
		require.NotContains(t, logs.String(), cache, "a path of the copy is logged")
	})

	// An error names the built-in set as such, not its copy.
	code, _, stderr := runCLI(t, "run", "--kv-cache-dtype", "f16")
	require.Equal(t, exitBadInput, code)
	require.Contains(t, stderr, "--kv-cache-dtype f16: (built in) references/tiny-gpt2 is a plain reference set")
	require.NotContains(t, stderr, cache)
}

func indexLine(lines []string, want string) int {
	for i, l := range lines {
		if strings.TrimSpace(l) == strings.TrimSpace(want) {
			return i
		}
	}
	return -1
}

// TestBuiltinDefaultsUnwritableCache: with the user's cache directory
// unusable (read-only, or here a regular file, which even root cannot
// write into) run, generate and serve --dry-run outside a clone copy the
// built-in defaults into the temporary directory instead (issue 43 item 5).
func TestBuiltinDefaultsUnwritableCache(t *testing.T) {
	t.Chdir(t.TempDir())
	notDir := filepath.Join(t.TempDir(), "cache")
	require.NoError(t, os.WriteFile(notDir, []byte("not a directory"), 0o444))
	t.Setenv("XDG_CACHE_HOME", notDir)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	saved := builtin.dirs
	builtin.dirs = nil // copies another test made elsewhere
	t.Cleanup(func() { builtin.dirs = saved })

	for _, args := range [][]string{
		{"run", "--checkpoint", "12"},
		{"generate", "--prompt", "Hi", "--max-tokens", "2"},
		{"serve", "--dry-run"},
	} {
		code, out, stderr := runCLI(t, args...)
		require.Equal(t, exitOK, code, "%v: %s%s", args, out, stderr)
	}
	copies, err := filepath.Glob(filepath.Join(tmp, "llorch-check-*", "builtin-*", "testdata", "*"))
	require.NoError(t, err)
	require.NotEmpty(t, copies, "nothing copied into $TMPDIR")
}
