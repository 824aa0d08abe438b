package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/stretchr/testify/require"
)

// TestDumpRefusesItsOwnReferences: dump --force never writes Go's output
// over the reference set it reads, however --out names it; the set is
// left as it was.
func TestDumpRefusesItsOwnReferences(t *testing.T) {
	tests := []struct {
		name string
		// args returns dump's arguments and where the set it reads is
		args func(model, refs, dir string) ([]string, string)
	}{
		{"same path", func(model, refs, _ string) ([]string, string) {
			return []string{"--model", model, "--references", refs, "--out", refs}, refs
		}},
		{"same directory, spelled otherwise", func(model, refs, _ string) ([]string, string) {
			return []string{"--model", model, "--references", refs, "--out", refs + string(filepath.Separator) + "."}, refs
		}},
		{"through a symbolic link", func(model, refs, dir string) ([]string, string) {
			link := filepath.Join(dir, "link")
			require.NoError(t, os.Symlink(refs, link))
			return []string{"--model", model, "--references", refs, "--out", link}, refs
		}},
		{"inside the set", func(model, refs, _ string) ([]string, string) {
			return []string{"--model", model, "--references", refs, "--out", filepath.Join(refs, "go")}, refs
		}},
		{"the set found beside the model", func(model, refs, dir string) ([]string, string) {
			beside := filepath.Join(filepath.Dir(model), "references", filepath.Base(model))
			require.NoError(t, os.MkdirAll(filepath.Dir(beside), 0o755))
			require.NoError(t, os.Rename(refs, beside))
			return []string{"--model", model, "--out", beside}, beside
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			model, refs, dir := fixture.CopyDir(t, fixture.TinyModel()), fixture.CopyDir(t, fixture.TinyReferences()), t.TempDir()
			args, set := tc.args(model, refs, dir)
			manifest, err := os.ReadFile(filepath.Join(set, "manifest.json"))
			require.NoError(t, err)
			code, stdout, stderr := runCLI(t, append([]string{"dump", "--force"}, args...)...)
			require.Equal(t, exitBadInput, code, "stdout: %s\nstderr: %s", stdout, stderr)
			require.Contains(t, stderr, "would overwrite")
			require.Contains(t, stderr, "the reference set this dump reads")
			after, err := os.ReadFile(filepath.Join(set, "manifest.json"))
			require.NoError(t, err)
			require.Equal(t, string(manifest), string(after), "the set is untouched")
			_, err = os.Stat(filepath.Join(set, "story", "l00_ln_1.f64.npy"))
			require.NoError(t, err, "its float64 twins are still there")
		})
	}
}
