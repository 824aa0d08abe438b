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

// readmeDocs are the files whose examples TestREADMEExamples runs, each
// with the fewest examples it must be found to run: the README and the
// pages its examples moved to (docs/validate.md, docs/generate.md), and
// the probe guide's own server.
var readmeDocs = []struct {
	path    string
	minimum int
}{
	{"README.md", 3},
	{"docs/validate.md", 3},
	{"docs/generate.md", 2},
	{"docs/probe.md", 1},
	{"docs/deploy.md", 1},
}

// readmeBlock is one fenced block of a document that the test runs.
type readmeBlock struct {
	line  int      // of the opening fence
	cmds  []string // shell commands, continuation lines joined
	wants []string // for a transcript ("$ cmd" then its output): each command's stdout
	skip  string   // why the block is not run (<!-- readme-test: skip: why -->)
}

// TestREADMEExamples runs the examples of README.md and the other pages
// of readmeDocs as printed, as a new user would after `make install`: a
// transcript must print what it shows (paths of the clone read as
// /work/main), any other sh block must exit 0. Paths under /tmp go to a temp dir, and serve runs
// in the background until its block's requests are done. The set-up
// commands, the real-GPT-2 blocks and the container engine's say why they
// are not run here.
func TestREADMEExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every README example (-short)")
	}
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "bin")
	// curl reads $CURL_HOME/.curlrc: an HTTP error must fail the example.
	require.NoError(t, os.WriteFile(filepath.Join(tmp, ".curlrc"), []byte("fail-with-body\nsilent\nshow-error\n"), 0o644))
	env := append(os.Environ(), "GOBIN="+bin, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "CURL_HOME="+tmp)
	install := exec.Command("go", "install", "./cmd/llorch-check") // what the README's make install does
	install.Dir, install.Env = root, env
	out, err := install.CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, doc := range readmeDocs {
		t.Run(doc.path, func(t *testing.T) {
			ran := runDocExamples(t, root, doc.path, tmp, env)
			require.GreaterOrEqual(t, ran, doc.minimum, "%s's examples were not found", doc.path)
		})
	}
}

// runDocExamples runs one document's examples (TestREADMEExamples) and
// returns how many blocks it ran.
func runDocExamples(t *testing.T, root, doc, tmp string, env []string) int {
	path := filepath.Join(root, doc)
	blocks := readmeBlocks(t, path)
	// LLORCH_README_UPDATE=1 writes what each transcript's command prints
	// into the document instead of failing, for a change that moves the
	// numbers on purpose (review the diff).
	update := os.Getenv("LLORCH_README_UPDATE") != ""
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	readme := string(raw)
	ran := 0
	torch := exec.Command("/usr/bin/python3", "-c", "import torch, numpy").Run() == nil
	for _, b := range blocks {
		if b.skip == "" && !torch && slices.ContainsFunc(b.cmds, func(c string) bool { return strings.Contains(c, "pytorch/dump_references.py") }) {
			// As make test: the PyTorch steps need Debian's torch; CI has it.
			require.NotEqual(t, "true", os.Getenv("CI"), "%s:%d needs /usr/bin/python3 with torch", doc, b.line)
			b.skip = "needs /usr/bin/python3 with torch and numpy"
		}
		if b.skip != "" {
			t.Logf("%s:%d not run: %s", doc, b.line, b.skip)
			continue
		}
		ran++
		var server *exec.Cmd
		for i, c := range b.cmds {
			c = strings.ReplaceAll(c, "/tmp/", tmp+"/")
			// serve runs in the background: a sh block's, or a transcript's
			// "$ llorch-check serve … &", which prints nothing.
			if bg, ok := strings.CutSuffix(c, " &"); strings.HasPrefix(c, "llorch-check serve ") && (b.wants == nil || ok) {
				require.True(t, b.wants == nil || b.wants[i] == "", "%s:%d: %s shows output; a server in the background prints none", doc, b.line, c)
				server = startServer(t, root, env, bg)
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
			require.NoError(t, err, "%s:%d: %s\n%s%s", doc, b.line, c, out, stderr)
			if b.wants != nil {
				got := strings.ReplaceAll(strings.ReplaceAll(string(out), root, readmeRoot), tmp, "/tmp")
				if elided(b.wants[i]) {
					require.True(t, matchElided(b.wants[i], got), "%s:%d: %s prints something else:\n%s", doc, b.line, c, got)
					continue
				}
				if update && got != b.wants[i] {
					readme = strings.Replace(readme, b.wants[i], got, 1)
					continue
				}
				require.Equal(t, b.wants[i], got, "%s:%d: %s prints something else", doc, b.line, c)
			}
		}
		if server != nil {
			require.NoError(t, server.Process.Signal(syscall.SIGTERM))
			require.NoError(t, server.Wait(), "%s:%d: serve did not shut down cleanly", doc, b.line)
		}
	}
	if update {
		require.NoError(t, os.WriteFile(path, []byte(readme), 0o644))
	}
	return ran
}

// elided says whether a transcript's output leaves lines out: a line "…"
// stands for any number of lines.
func elided(want string) bool {
	return slices.Contains(strings.Split(want, "\n"), "…")
}

// matchElided matches got against an elided output: "…" takes any number
// of lines, and other lines compare with runs of spaces as one, since a
// table's columns may be padded to a path the test put elsewhere.
func matchElided(want, got string) bool {
	fields := func(s string) []string {
		lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
		for i, l := range lines {
			lines[i] = strings.Join(strings.Fields(l), " ")
		}
		return lines
	}
	var match func(w, g []string) bool
	match = func(w, g []string) bool {
		switch {
		case len(w) == 0:
			return len(g) == 0
		case w[0] == "…":
			return match(w[1:], g) || (len(g) > 0 && match(w, g[1:]))
		}
		return len(g) > 0 && w[0] == g[0] && match(w[1:], g[1:])
	}
	return match(fields(want), fields(got))
}

// startServer runs a serve command in the background and waits until it
// is ready on the port the README uses.
func startServer(t *testing.T, root string, env []string, c string) *exec.Cmd {
	t.Helper()
	if resp, err := http.Get("http://localhost:8080/readyz"); err == nil {
		resp.Body.Close()
		t.Fatalf("%s: something already answers on :8080 (a serve left by an earlier, killed test run?); stop it first", c)
	}
	cmd := exec.Command("bash", "-c", "exec "+c)
	cmd.Dir, cmd.Env = root, env
	dieWithTest(cmd)
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
