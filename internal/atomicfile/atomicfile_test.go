package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.txt")
	require.NoError(t, os.WriteFile(path, []byte("old"), 0o644))

	tests := []struct {
		name    string
		fill    func(io.Writer) error
		want    string
		wantErr bool
	}{
		{"failure keeps the old file", func(w io.Writer) error {
			io.WriteString(w, "partial")
			return errors.New("boom")
		}, "old", true},
		{"success replaces it", func(w io.Writer) error {
			_, err := io.WriteString(w, "new")
			return err
		}, "new", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Write(path, tc.fill)
			require.Equal(t, tc.wantErr, err != nil, "err = %v", err)
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, tc.want, string(got))
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Len(t, entries, 1, "no temporary file may be left behind")
		})
	}
}

// TestCleanStale: the twins an interrupted run left (its process gone) are
// removed by the next write of the same path; a live process's twin, other
// paths' twins and ordinary files stay.
func TestCleanStale(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "model.gguf")
	dead := exitedPID(t)
	mk := func(name string, isDir bool) string {
		p := filepath.Join(dir, name)
		if isDir {
			require.NoError(t, os.MkdirAll(filepath.Join(p, "sub"), 0o755))
		} else {
			require.NoError(t, os.WriteFile(p, []byte("x"), 0o644))
		}
		return p
	}
	staleFile := mk(fmt.Sprintf(".model.gguf.tmp-%d-123", dead), false)
	staleDir := mk(fmt.Sprintf(".model.gguf.tmp-%d-456", dead), true)
	live := mk(fmt.Sprintf(".model.gguf.tmp-%d-789", os.Getppid()), false)
	other := mk(fmt.Sprintf(".other.gguf.tmp-%d-1", dead), false)
	plain := mk("model.gguf.tmp-notes", false)
	require.NoError(t, Write(path, func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }))
	for _, gone := range []string{staleFile, staleDir} {
		_, err := os.Stat(gone)
		require.True(t, os.IsNotExist(err), gone)
	}
	for _, kept := range []string{live, other, plain, path} {
		_, err := os.Stat(kept)
		require.NoError(t, err, kept)
	}
}

// exitedPID is the pid of a process that has exited.
func exitedPID(t *testing.T) int {
	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	return cmd.Process.Pid
}
