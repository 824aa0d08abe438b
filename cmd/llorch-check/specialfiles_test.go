//go:build unix

package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/stretchr/testify/require"
)

// TestSpecialFilesRefused puts a named pipe that no one writes to in the
// place of each file a command opens. Opened as a file it would block the
// command in open() for ever, deaf to SIGINT and SIGTERM; each must be
// refused instead, as bad input, naming the file.
func TestSpecialFilesRefused(t *testing.T) {
	type paths struct{ model, llama, refs, dir string }
	tests := []struct {
		name string
		fifo func(p paths) string // the file to replace with a named pipe
		args func(p paths) []string
	}{
		{"config.json",
			func(p paths) string { return filepath.Join(p.model, "config.json") },
			func(p paths) []string { return []string{"run", "--model", p.model, "--references", p.refs} }},
		{"model.safetensors",
			func(p paths) string { return filepath.Join(p.model, "model.safetensors") },
			func(p paths) []string {
				return []string{"generate", "--model", p.model, "--tokens", "1,2", "--max-tokens", "1"}
			}},
		{"GGUF model",
			func(p paths) string { return filepath.Join(p.dir, "model.gguf") },
			func(p paths) []string {
				return []string{"run", "--model", filepath.Join(p.dir, "model.gguf"), "--references", p.refs}
			}},
		{"vocab.json",
			func(p paths) string { return filepath.Join(p.model, "vocab.json") },
			func(p paths) []string { return []string{"tokenize", "--model", p.model, "Hello"} }},
		{"merges.txt",
			func(p paths) string { return filepath.Join(p.model, "merges.txt") },
			func(p paths) []string {
				return []string{"generate", "--model", p.model, "--prompt", "Hi", "--max-tokens", "1"}
			}},
		{"tokenizer GGUF",
			func(p paths) string { return filepath.Join(p.llama, "tokenizer.gguf") },
			func(p paths) []string { return []string{"tokenize", "--model", p.llama, "Hello"} }},
		{"tokenizer_config.json",
			func(p paths) string { return filepath.Join(p.llama, "tokenizer_config.json") },
			func(p paths) []string { return []string{"serve", "--model", p.llama, "--dry-run"} }},
		{"convert input",
			func(p paths) string { return filepath.Join(p.dir, "hf") },
			func(p paths) []string {
				return []string{"convert", "--to", "gguf", filepath.Join(p.dir, "hf"), filepath.Join(p.dir, "out.gguf")}
			}},
		{"convert --tokenizer",
			func(p paths) string { return filepath.Join(p.dir, "vocab.gguf") },
			func(p paths) []string {
				return []string{"convert", "--to", "gguf", "--tokenizer", filepath.Join(p.dir, "vocab.gguf"), p.llama, filepath.Join(p.dir, "out.gguf")}
			}},
		{"manifest.json",
			func(p paths) string { return filepath.Join(p.refs, "manifest.json") },
			func(p paths) []string { return []string{"run", "--model", p.model, "--references", p.refs} }},
		{"reference tensor",
			func(p paths) string { return filepath.Join(p.refs, "story", "l00_ln_1.npy") },
			func(p paths) []string { return []string{"run", "--model", p.model, "--references", p.refs} }},
		{"diff's second set",
			func(p paths) string { return filepath.Join(p.refs, "manifest.json") },
			func(p paths) []string { return []string{"diff", fixture.TinyReferences(), p.refs} }},
		{"serve --config",
			func(p paths) string { return filepath.Join(p.dir, "serve.yaml") },
			func(p paths) []string {
				return []string{"serve", "--config", filepath.Join(p.dir, "serve.yaml"), "--dry-run"}
			}},
		{"serve --chat-template",
			func(p paths) string { return filepath.Join(p.dir, "chat.jinja") },
			func(p paths) []string {
				return []string{"serve", "--model", p.model, "--chat-template", filepath.Join(p.dir, "chat.jinja"), "--dry-run"}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := paths{
				model: fixture.CopyDir(t, fixture.TinyModel()),
				llama: fixture.CopyDir(t, fixture.FamilyModel("tiny-llama")),
				refs:  fixture.CopyDir(t, fixture.TinyReferences()),
				dir:   t.TempDir(),
			}
			fifo := tc.fifo(p)
			fixture.FIFO(t, fifo)
			type result struct {
				code           int
				stdout, stderr string
			}
			done := make(chan result, 1)
			go func() {
				code, stdout, stderr := runCLI(t, tc.args(p)...)
				done <- result{code, stdout, stderr}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(60 * time.Second):
				t.Fatalf("%s: still running after 60 s (blocked opening %s?)", strings.Join(tc.args(p), " "), fifo)
			}
			require.Equal(t, exitBadInput, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
			require.Contains(t, r.stderr, fifo)
			require.Contains(t, r.stderr, "named pipe")
		})
	}
}
