//go:build unix

package main

import (
	"fmt"
	"net/http"
	"os"
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
