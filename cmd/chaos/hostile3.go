//go:build unix

package main

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Probes of issue 43 (hostile inputs, round 3).

// hostileTemplates: templates that recurse without end, build a huge
// range or print a huge string stop serve at start-up naming the file and
// the sandbox's limit; the process never dies of a stack overflow or
// runs out of memory.
func hostileTemplates(_ *server, _ bool) (string, bool) {
	dir, err := os.MkdirTemp("", "chaos-templates-")
	if err != nil {
		return err.Error(), false
	}
	defer os.RemoveAll(dir)
	templates := map[string]string{
		"recursive.jinja": `{% macro f(n) %}{% if n < (messages[-1]['content']|length) * 1000 %}{{ f(n+1) }}{% endif %}{% endmacro %}{{ f(0) }}{{ messages[-1]['content'] }}`,
		"range.jinja":     `{% for i in range(10**9) %}{% endfor %}`,
		"repeat.jinja":    `{{ 'x' * 100000000 }}`,
	}
	for name, src := range templates {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			return err.Error(), false
		}
		code, stderr := runCLI(30*time.Second, "serve", "--chat-template", path, "--dry-run")
		if code != 2 || !strings.Contains(stderr, name) || !strings.Contains(stderr, "sandbox") {
			return fmt.Sprintf("%s: exit %d, %.60s", name, code, stderr), false
		}
	}
	return "3 templates refused, exit 2", true
}

// longPrompts: prompts beyond 32,768 characters sent at once are refused
// before they are tokenized, so they cannot take the server's memory.
func longPrompts(s *server, short bool) (string, bool) {
	n := 32
	if short {
		n = 8
	}
	before, _ := s.memory()
	body := `{"prompt":"` + strings.Repeat("a", 60000) + `","max_tokens":1}` // under --max-body-bytes
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := range codes {
		wg.Go(func() { codes[i], _ = s.post("/v1/completions", body) })
	}
	wg.Wait()
	after, _ := s.memory()
	grew := (after - before) / 1e6
	ok := grew < 40
	bad := 0
	for _, c := range codes {
		if c != http.StatusBadRequest {
			ok, bad = false, bad+1
		}
	}
	return fmt.Sprintf("%d x 400 (%d other), RSS +%.0f MB", n-bad, bad, grew), ok
}

// oversizedConfig: a config.json beyond its 16 MiB cap (sparse: no disk
// used) is refused naming the file and the cap, before it is read.
func oversizedConfig(_ *server, _ bool) (string, bool) {
	dir, err := copyDir("testdata/tiny-gpt2")
	if err != nil {
		return err.Error(), false
	}
	defer os.RemoveAll(filepath.Dir(dir))
	cfg := filepath.Join(dir, "config.json")
	if err := os.Truncate(cfg, 16<<20+1); err != nil {
		return err.Error(), false
	}
	code, stderr := runCLI(10*time.Second, "generate", "--model", dir, "--prompt", "Hi", "--max-tokens", "1")
	if code != 2 || !strings.Contains(stderr, cfg) || !strings.Contains(stderr, "16 MiB") {
		return fmt.Sprintf("exit %d, %.60s", code, stderr), false
	}
	return "refused naming the cap, exit 2", true
}

// weightsCacheContent: generate --weights-cache, then the model file
// changed in place keeping its size and mtime (as reproducible images
// normalise mtimes): the next run generates the changed model's tokens,
// as a run without the cache does, not the cached model's.
func weightsCacheContent(_ *server, _ bool) (string, bool) {
	dir, err := copyDir("testdata/tiny-gpt2")
	if err != nil {
		return err.Error(), false
	}
	defer os.RemoveAll(filepath.Dir(dir))
	cache := filepath.Join(filepath.Dir(dir), "weights-cache")
	generate := func(withCache bool) (string, error) {
		args := []string{"generate", "--model", dir, "--prompt", "The library opened", "--max-tokens", "8", "--temperature", "0"}
		if withCache {
			args = append(args, "--weights-cache", cache)
		}
		cmd := exec.Command(binPath, args...)
		var stdout bytes.Buffer
		cmd.Stdout = &stdout
		if code, stderr := runCmd(cmd, 30*time.Second); code != 0 {
			return "", fmt.Errorf("generate: exit %d, %.60s", code, stderr)
		}
		return stdout.String(), nil
	}
	before, err := generate(true)
	if err != nil {
		return err.Error(), false
	}
	weights := filepath.Join(dir, "model.safetensors")
	if err := zeroMiddle(weights); err != nil {
		return err.Error(), false
	}
	cached, err := generate(true)
	if err != nil {
		return err.Error(), false
	}
	fresh, err := generate(false)
	if err != nil {
		return err.Error(), false
	}
	return fmt.Sprintf("changed: %v, same as uncached: %v", cached != before, cached == fresh), cached == fresh && fresh != before
}

// zeroMiddle overwrites the middle third of a file with zeros (valid
// float32s) and gives it back its size and modification time.
func zeroMiddle(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(make([]byte, info.Size()/3), info.Size()/3)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Chtimes(path, info.ModTime(), info.ModTime())
}

// unwritableCache: outside a clone, with the user's cache directory
// unusable (a regular file, which even root cannot make a directory
// in), serve --dry-run on the built-in defaults copies them to $TMPDIR
// and exits 0.
func unwritableCache(_ *server, _ bool) (string, bool) {
	dir, err := os.MkdirTemp("", "chaos-cache-")
	if err != nil {
		return err.Error(), false
	}
	defer os.RemoveAll(dir)
	notDir := filepath.Join(dir, "cache")
	tmp := filepath.Join(dir, "tmp")
	work := filepath.Join(dir, "work")
	for _, err := range []error{os.WriteFile(notDir, []byte("not a directory"), 0o444), os.Mkdir(tmp, 0o755), os.Mkdir(work, 0o755)} {
		if err != nil {
			return err.Error(), false
		}
	}
	cmd := exec.Command(binPath, "serve", "--dry-run")
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+notDir, "TMPDIR="+tmp)
	code, stderr := runCmd(cmd, 30*time.Second)
	copies, _ := filepath.Glob(filepath.Join(tmp, "llorch-check-*", "builtin-*"))
	return fmt.Sprintf("exit %d, %d copies in $TMPDIR", code, len(copies)), code == 0 && len(copies) > 0 && !strings.Contains(stderr, "read-only")
}
