package atomicfile

import (
	"errors"
	"io"
	"os"
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
