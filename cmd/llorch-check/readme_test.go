package main

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// readmeRoot is where the README's printed paths say the clone is.
const readmeRoot = "/work/main"

// readmeBlock is one fenced block of README.md that the test runs.
type readmeBlock struct {
	line  int      // of the opening fence
	cmds  []string // shell commands, continuation lines joined
	wants []string // for a transcript ("$ cmd" then its output): each command's stdout
	skip  string   // why the block is not run (<!-- readme-test: skip: why -->)
}

// TestREADMEExamples runs README.md's examples as printed, as a new user
// would after `make install`: a transcript must print what it shows (paths
// of the clone read as /work/main), any other sh block must exit 0. Paths
// under /tmp go to a temp dir, and serve runs in the background until its
// block's requests are done. The set-up commands and the real-GPT-2 blocks
// say why they are not run here.
func TestREADMEExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every README example (-short)")
	}
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	blocks := readmeBlocks(t, filepath.Join(root, "README.md"))
	// LLORCH_README_UPDATE=1 writes what each transcript's command prints
	// into README.md instead of failing, for a change that moves the
	// numbers on purpose (review the diff).
	update := os.Getenv("LLORCH_README_UPDATE") != ""
	raw, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	readme := string(raw)
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "bin")
	// curl reads $CURL_HOME/.curlrc: an HTTP error must fail the example.
	require.NoError(t, os.WriteFile(filepath.Join(tmp, ".curlrc"), []byte("fail-with-body\nsilent\nshow-error\n"), 0o644))
	env := append(os.Environ(), "GOBIN="+bin, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "CURL_HOME="+tmp)
	ran := 0
	torch := exec.Command("/usr/bin/python3", "-c", "import torch, numpy").Run() == nil
	for _, b := range blocks {
		if b.skip == "" && !torch && slices.ContainsFunc(b.cmds, func(c string) bool { return strings.Contains(c, "scripts/dump_references.py") }) {
			// As make test: the PyTorch steps need Debian's torch; CI has it.
			require.NotEqual(t, "true", os.Getenv("CI"), "README.md:%d needs /usr/bin/python3 with torch", b.line)
			b.skip = "needs /usr/bin/python3 with torch and numpy"
		}
		if b.skip != "" {
			t.Logf("README.md:%d not run: %s", b.line, b.skip)
			continue
		}
		ran++
		var server *exec.Cmd
		for i, c := range b.cmds {
			c = strings.ReplaceAll(c, "/tmp/", tmp+"/")
			if strings.HasPrefix(c, "llorch-check serve ") {
				server = startServer(t, root, env, c)
				continue
			}
			cmd := exec.Command("bash", "-o", "pipefail", "-c", c)
			cmd.Dir, cmd.Env = root, env
			out, err := cmd.Output()
			var stderr string
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = string(ee.Stderr)
				// A transcript may show a verdict of failure (exit 1, as
				// bisect finding a fault); its output is checked below.
				if b.wants != nil && ee.ExitCode() == exitFailed {
					err = nil
				}
			}
			require.NoError(t, err, "README.md:%d: %s\n%s%s", b.line, c, out, stderr)
			if b.wants != nil {
				got := strings.ReplaceAll(string(out), root, readmeRoot)
				if update && got != b.wants[i] {
					readme = strings.Replace(readme, b.wants[i], got, 1)
					continue
				}
				require.Equal(t, b.wants[i], got, "README.md:%d: %s prints something else", b.line, c)
			}
		}
		if server != nil {
			require.NoError(t, server.Process.Signal(syscall.SIGTERM))
			require.NoError(t, server.Wait(), "README.md:%d: serve did not shut down cleanly", b.line)
		}
	}
	require.GreaterOrEqual(t, ran, 6, "the README's examples were not found")
	if update {
		require.NoError(t, os.WriteFile(filepath.Join(root, "README.md"), []byte(readme), 0o644))
	}
}

// startServer runs a serve command in the background and waits until it
// is ready on the port the README uses.
func startServer(t *testing.T, root string, env []string, c string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("bash", "-c", "exec "+c)
	cmd.Dir, cmd.Env = root, env
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for ctx.Err() == nil {
		resp, err := http.Get("http://localhost:8080/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return cmd
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: not ready on :8080 within a minute", c)
	return nil
}

// readmeBlocks returns the sh blocks and the transcripts of a README.
func readmeBlocks(t *testing.T, path string) []readmeBlock {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var (
		blocks  []readmeBlock
		cur     *readmeBlock
		lines   []string
		skip    string
		lineNum int
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lineNum++
		line := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(line, "<!-- readme-test: skip: "):
			skip = strings.TrimSuffix(strings.TrimPrefix(line, "<!-- readme-test: skip: "), " -->")
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &readmeBlock{line: lineNum, skip: skip}
			lines, skip = nil, ""
			if strings.TrimPrefix(line, "```") != "sh" {
				cur.wants = []string{} // a transcript, or output only
			}
		case cur != nil && strings.HasPrefix(line, "```"):
			if b, ok := parseBlock(*cur, lines); ok {
				blocks = append(blocks, b)
			}
			cur = nil
		case cur != nil:
			lines = append(lines, line)
		case strings.TrimSpace(line) != "":
			skip = ""
		}
	}
	require.NoError(t, sc.Err())
	return blocks
}

// parseBlock joins continuation lines of an sh block, or splits a
// transcript into commands and outputs. A block with neither (output
// only, like make bench's table) is not an example.
func parseBlock(b readmeBlock, lines []string) (readmeBlock, bool) {
	if b.wants == nil {
		var cmd string
		for _, l := range lines {
			if strings.HasSuffix(l, `\`) {
				cmd += strings.TrimSuffix(l, `\`) + " "
				continue
			}
			b.cmds, cmd = append(b.cmds, cmd+l), ""
		}
		return b, len(b.cmds) > 0
	}
	for _, l := range lines {
		if c, ok := strings.CutPrefix(l, "$ "); ok {
			b.cmds, b.wants = append(b.cmds, c), append(b.wants, "")
			continue
		}
		if len(b.wants) > 0 {
			b.wants[len(b.wants)-1] += l + "\n"
		}
	}
	return b, len(b.cmds) > 0
}
