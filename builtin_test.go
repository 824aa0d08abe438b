package llorchcheck

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// diskFiles lists the regular files under dir, slash-separated.
func diskFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		files = append(files, filepath.ToSlash(rel))
		return err
	}))
	slices.Sort(files)
	return files
}

// TestBuiltinIsTestdata: the binary carries the committed default model
// (its vocabulary from testdata/gpt2-vocab) and reference set, every file
// and byte of them, so a regenerated set cannot leave a stale copy behind.
func TestBuiltinIsTestdata(t *testing.T) {
	for _, dir := range []string{BuiltinModel, BuiltinReferences} {
		t.Run(dir, func(t *testing.T) {
			files, err := BuiltinFiles(dir)
			require.NoError(t, err)
			require.Equal(t, diskFiles(t, filepath.FromSlash(dir)), files)
			for _, name := range files {
				want, err := os.ReadFile(filepath.Join(filepath.FromSlash(dir), filepath.FromSlash(name)))
				require.NoError(t, err)
				got, err := ReadBuiltin(dir, name)
				require.NoError(t, err)
				require.Equal(t, want, got, "%s/%s", dir, name)
			}
		})
	}
	_, err := BuiltinFiles("testdata/tiny-llama")
	require.ErrorContains(t, err, "not built in")
	_, err = ReadBuiltin(BuiltinModel, "../gpt2-vocab/LICENSE")
	require.ErrorIs(t, err, fs.ErrInvalid)
}

// TestBuiltinCopy: the copy on disk is the binary's files, whatever was
// there before; an intact copy is used as it is.
func TestBuiltinCopy(t *testing.T) {
	damage := []struct {
		name string
		do   func(t *testing.T, dir string)
	}{
		{"intact", func(t *testing.T, dir string) {}},
		{"changed", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "hello", "logits.npy")
			require.NoError(t, os.Chmod(p, 0o644))
			require.NoError(t, os.WriteFile(p, []byte("not a tensor"), 0o644))
		}},
		{"truncated", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "manifest.json")
			require.NoError(t, os.Chmod(p, 0o644))
			require.NoError(t, os.Truncate(p, 10))
		}},
		{"missing", func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(filepath.Join(dir, "story", "logits.npy")))
		}},
		{"extra", func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "hello", "stray.npy"), nil, 0o644))
		}},
		{"symlink", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "long", "logits.npy")
			require.NoError(t, os.Remove(p))
			require.NoError(t, os.Symlink(filepath.Join(dir, "story", "logits.npy"), p))
		}},
		{"removed", func(t *testing.T, dir string) {
			require.NoError(t, os.RemoveAll(dir))
		}},
	}
	want := diskFiles(t, filepath.FromSlash(BuiltinReferences))
	for _, d := range damage {
		t.Run(d.name, func(t *testing.T) {
			cache := t.TempDir()
			dir, err := BuiltinCopy(cache, BuiltinReferences)
			require.NoError(t, err)
			require.Equal(t, "tiny-gpt2", filepath.Base(dir))
			manifest := filepath.Join(dir, "manifest.json")
			old := time.Unix(1, 0)
			require.NoError(t, os.Chtimes(manifest, old, old))
			d.do(t, dir)

			again, err := BuiltinCopy(cache, BuiltinReferences)
			require.NoError(t, err)
			require.Equal(t, dir, again)
			require.Equal(t, want, diskFiles(t, dir))
			for _, name := range want {
				got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
				require.NoError(t, err)
				data, err := ReadBuiltin(BuiltinReferences, name)
				require.NoError(t, err)
				require.Equal(t, data, got, name)
			}
			st, err := os.Stat(manifest)
			require.NoError(t, err)
			if d.name == "intact" {
				require.Equal(t, old, st.ModTime(), "an intact copy is rewritten")
			}
			entries, err := os.ReadDir(filepath.Dir(dir))
			require.NoError(t, err)
			require.Len(t, entries, 1, "temporary directories left beside the copy")
		})
	}
}

// Processes sharing a cache find one damaged copy at once and repair it:
// each gets a complete copy, none sees a file vanish while it reads what
// it was given, and nothing is left beside the copy.
func TestBuiltinCopyConcurrentRepair(t *testing.T) {
	want := diskFiles(t, filepath.FromSlash(BuiltinReferences))
	for round := range 3 {
		cache := t.TempDir()
		dir, err := BuiltinCopy(cache, BuiltinReferences)
		require.NoError(t, err)
		manifest := filepath.Join(dir, "manifest.json")
		require.NoError(t, os.Chmod(manifest, 0o644))
		require.NoError(t, os.Truncate(manifest, 10))

		errs := make(chan error, 64)
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				got, err := BuiltinCopy(cache, BuiltinReferences)
				if err != nil {
					errs <- err
					return
				}
				for range 2 {
					for _, name := range want {
						data, err := os.ReadFile(filepath.Join(got, filepath.FromSlash(name)))
						if err != nil {
							errs <- err
							return
						}
						if w, _ := ReadBuiltin(BuiltinReferences, name); !bytes.Equal(w, data) {
							errs <- fmt.Errorf("%s differs", name)
							return
						}
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("round %d: %v", round, err)
		}
		require.Equal(t, want, diskFiles(t, dir))
		entries, err := os.ReadDir(filepath.Dir(dir))
		require.NoError(t, err)
		require.Len(t, entries, 1, "round %d: directories left beside the copy", round)
	}
}
