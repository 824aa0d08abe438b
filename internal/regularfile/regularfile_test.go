//go:build unix

package regularfile

import (
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/stretchr/testify/require"
)

// TestRefusesSpecialFiles opens every kind of file through each function:
// a regular file (or a link to one) reads, anything else is refused with
// an error naming it and its kind, and a named pipe nobody writes to never
// blocks (the bare os.Open would wait for a writer for ever).
func TestRefusesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	regular := filepath.Join(dir, "config.json")
	require.NoError(t, os.WriteFile(regular, []byte(`{"a":1}`), 0o644))
	link := filepath.Join(dir, "link.json")
	require.NoError(t, os.Symlink("config.json", link))
	fifo := filepath.Join(dir, "model.safetensors")
	fixture.FIFO(t, fifo)
	sub := filepath.Join(dir, "tokenizer.json")
	require.NoError(t, os.Mkdir(sub, 0o755))
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	defer l.Close()

	root, err := os.OpenRoot(dir)
	require.NoError(t, err)
	defer root.Close()
	openers := map[string]func(path string) ([]byte, error){
		"Open": func(path string) ([]byte, error) { return readAll(Open(path)) },
		"OpenIn": func(path string) ([]byte, error) {
			rel, err := filepath.Rel(dir, path)
			require.NoError(t, err)
			return readAll(OpenIn(root, rel))
		},
		"ReadFile": ReadFile,
		"Check": func(path string) ([]byte, error) {
			if err := Check(path); err != nil {
				return nil, err
			}
			return []byte(`{"a":1}`), nil
		},
	}
	tests := []struct {
		path     string
		wantKind string // "" reads {"a":1}
	}{
		{regular, ""},
		{link, ""},
		{fifo, "named pipe (FIFO)"},
		{sub, "directory"},
		{sock, "socket"},
	}
	for name, read := range openers {
		for _, tc := range tests {
			t.Run(name+"/"+filepath.Base(tc.path), func(t *testing.T) {
				type result struct {
					b   []byte
					err error
				}
				done := make(chan result, 1)
				go func() {
					b, err := read(tc.path)
					done <- result{b, err}
				}()
				var r result
				select {
				case r = <-done:
				case <-time.After(10 * time.Second):
					t.Fatalf("still blocked opening %s after 10s", tc.path)
				}
				if tc.wantKind == "" {
					require.NoError(t, r.err)
					require.Equal(t, `{"a":1}`, string(r.b))
					return
				}
				require.ErrorIs(t, r.err, ErrNotRegular)
				var pe *fs.PathError
				require.True(t, errors.As(r.err, &pe), "%v", r.err)
				require.Contains(t, r.err.Error(), filepath.Base(tc.path))
				require.Contains(t, r.err.Error(), "a "+tc.wantKind+", not a regular file")
			})
		}
	}
}

func readAll(f *os.File, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

func TestCharDevice(t *testing.T) {
	err := Check("/dev/null")
	require.ErrorIs(t, err, ErrNotRegular)
	require.EqualError(t, err, "open /dev/null: a character device, not a regular file")
	_, err = ReadFile("/dev/zero") // os.ReadFile would never end
	require.ErrorIs(t, err, ErrNotRegular)
}

func TestMissing(t *testing.T) {
	_, err := ReadFile(filepath.Join(t.TempDir(), "absent"))
	require.ErrorIs(t, err, fs.ErrNotExist)
}
