package references

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture"
)

func TestWriterRoundTrip(t *testing.T) {
	m := validManifest()
	dir := writeSet(t, m)

	data, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(data, []byte("{\n  \"format_version\": 1,\n")), "two-space indent")
	require.True(t, bytes.HasSuffix(data, []byte("}\n")), "trailing newline")
	require.Contains(t, string(data), `"Hello <|endoftext|>"`, "no HTML escaping of prompts")
	require.Contains(t, string(data), `"file_f64": null`)
	require.Contains(t, string(data), `"rows": null`)

	s, err := Open(dir)
	require.NoError(t, err)
	want := m
	normalize(&want)
	// Generator went through JSON: compare it as JSON.
	require.JSONEq(t, fixture.MustJSON(t, want), fixture.MustJSON(t, s.Manifest))
	for _, ti := range s.Manifest.Tensors {
		got, err := s.Tensor(ti)
		require.NoError(t, err)
		require.Equal(t, values(ti.Shape), got)
	}
	require.Equal(t, []string{"set"}, dirNames(t, filepath.Dir(dir)), "no temporary directory is left")
}

// TestWriterOptionalSections: a Go dump may have no sampling, greedy,
// generation or loglikelihood; they are written as empty lists or null.
func TestWriterOptionalSections(t *testing.T) {
	m := validManifest()
	m.Tensors = m.Tensors[:3]
	m.Sampling, m.Greedy, m.Generation, m.Loglikelihood, m.Generator = nil, nil, nil, nil, nil
	dir := writeSet(t, m)
	data, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	require.NoError(t, err)
	require.Contains(t, string(data), `"sampling": [],`)
	require.Contains(t, string(data), `"generation": null,`)
	_, err = Open(dir)
	require.NoError(t, err)
}

func TestWriterAtomic(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "out")

	t.Run("abort mid-way leaves nothing", func(t *testing.T) {
		w, err := NewWriter(dir, false)
		require.NoError(t, err)
		m := validManifest()
		require.NoError(t, w.AddTensor(m.Tensors[0], values(m.Tensors[0].Shape)))
		w.Abort()
		w.Abort() // idempotent
		require.Empty(t, dirNames(t, parent))
		require.Error(t, w.AddTensor(m.Tensors[1], values(m.Tensors[1].Shape)), "use after Abort")
	})

	t.Run("failed commit leaves nothing", func(t *testing.T) {
		w, err := NewWriter(dir, false)
		require.NoError(t, err)
		m := validManifest()
		for _, ti := range m.Tensors {
			require.NoError(t, w.AddTensor(ti, values(ti.Shape)))
		}
		m.Cases[0].Tokens[0] = 99 // outside the vocabulary
		err = w.Commit(m)
		require.ErrorIs(t, err, ErrInvalid)
		require.ErrorContains(t, err, filepath.Join(dir, ManifestFile)+": cases[0].tokens[0]")
		require.Empty(t, dirNames(t, parent))
		w.Abort()
	})

	t.Run("commit refuses a manifest listing unwritten files", func(t *testing.T) {
		w, err := NewWriter(dir, false)
		require.NoError(t, err)
		m := validManifest()
		for _, ti := range m.Tensors[1:] {
			require.NoError(t, w.AddTensor(ti, values(ti.Shape)))
		}
		err = w.Commit(m)
		require.ErrorIs(t, err, ErrInvalid)
		require.ErrorContains(t, err, filepath.Join(dir, "hello", "embeddings.npy")+": listed as tensors[0].file")
		require.Empty(t, dirNames(t, parent))
	})

	t.Run("commit refuses files not in the manifest", func(t *testing.T) {
		w, err := NewWriter(dir, false)
		require.NoError(t, err)
		m := validManifest()
		for _, ti := range m.Tensors {
			require.NoError(t, w.AddTensor(ti, values(ti.Shape)))
		}
		m.Tensors = m.Tensors[1:]
		err = w.Commit(m)
		require.ErrorContains(t, err, "files written but not listed: [hello/embeddings.npy]")
		require.Empty(t, dirNames(t, parent))
	})
}

func TestWriterExisting(t *testing.T) {
	m := validManifest()
	older := m
	older.Generator = map[string]any{"script": "older"}

	t.Run("existing set refused without force", func(t *testing.T) {
		dir := writeSet(t, older)
		_, err := NewWriter(dir, false)
		require.ErrorIs(t, err, ErrInvalid)
		require.ErrorContains(t, err, dir+": a reference set already exists there (--force replaces it)")
	})

	t.Run("existing set replaced with force", func(t *testing.T) {
		dir := writeSet(t, older)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "stale.npy"), nil, 0o644))
		w, err := NewWriter(dir, true)
		require.NoError(t, err)
		defer w.Abort()
		for _, ti := range m.Tensors {
			require.NoError(t, w.AddTensor(ti, values(ti.Shape)))
		}
		// Until Commit, the old set is intact.
		s, err := Open(dir)
		require.NoError(t, err)
		require.Equal(t, "older", s.Manifest.Generator["script"])
		require.NoError(t, w.Commit(m))
		s, err = Open(dir)
		require.NoError(t, err)
		require.Equal(t, "go test", s.Manifest.Generator["script"])
		require.NoFileExists(t, filepath.Join(dir, "stale.npy"))
		require.Equal(t, []string{"set"}, dirNames(t, filepath.Dir(dir)))
	})

	t.Run("empty directory is fine without force", func(t *testing.T) {
		dir := t.TempDir()
		w, err := NewWriter(dir, false)
		require.NoError(t, err)
		defer w.Abort()
		for _, ti := range m.Tensors {
			require.NoError(t, w.AddTensor(ti, values(ti.Shape)))
		}
		require.NoError(t, w.Commit(m))
		_, err = Open(dir)
		require.NoError(t, err)
	})

	t.Run("other directory refused even with force", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("precious"), 0o644))
		_, err := NewWriter(dir, true)
		require.ErrorIs(t, err, ErrInvalid)
		require.ErrorContains(t, err, "holds no manifest.json; refusing to replace it, even with force")
		require.FileExists(t, filepath.Join(dir, "notes.txt"))
	})

	t.Run("file refused even with force", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "out")
		require.NoError(t, os.WriteFile(file, nil, 0o644))
		_, err := NewWriter(file, true)
		require.ErrorContains(t, err, "exists and is not a directory")
	})

	t.Run("set appearing during the dump is not overwritten", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "out")
		w, err := NewWriter(dir, false)
		require.NoError(t, err)
		for _, ti := range m.Tensors {
			require.NoError(t, w.AddTensor(ti, values(ti.Shape)))
		}
		other := writeSet(t, older)
		require.NoError(t, os.Rename(other, dir))
		require.ErrorContains(t, w.Commit(m), "a reference set already exists there")
		s, err := Open(dir)
		require.NoError(t, err)
		require.Equal(t, "older", s.Manifest.Generator["script"])
		require.Equal(t, []string{"out"}, dirNames(t, filepath.Dir(dir)))
	})
}

func TestWriterAddTensorInvalid(t *testing.T) {
	base := validManifest().Tensors[0] // embeddings [3 4]
	tests := []struct {
		name string
		edit func(ti *TensorInfo, data []float32) []float32
		want string
	}{
		{"length disagrees with shape", func(ti *TensorInfo, d []float32) []float32 { return d[:11] },
			"hello/cp7/-/embeddings: shape [3 4] does not hold the 11 values given"},
		{"no shape", func(ti *TensorInfo, d []float32) []float32 { ti.Shape = nil; return d[:1] },
			"shape [] does not hold the 1 values given"},
		{"NaN", func(ti *TensorInfo, d []float32) []float32 { d[5] = float32(nan()); return d },
			"value NaN at index [1 1] (element 5) is not finite"},
		{"path traversal", func(ti *TensorInfo, d []float32) []float32 { ti.File = "../x.npy"; return d },
			`hello/cp7/-/embeddings.file: path "../x.npy" leaves the set directory`},
		{"absolute path", func(ti *TensorInfo, d []float32) []float32 { ti.File = "/tmp/x.npy"; return d },
			"is absolute"},
		{"twin", func(ti *TensorInfo, d []float32) []float32 { ti.FileF64 = strp("x.f64.npy"); return d },
			"file_f64 must be nil"},
		{"dtype", func(ti *TensorInfo, d []float32) []float32 { ti.DType = ""; return d },
			`dtype "", want "float32"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent := t.TempDir()
			w, err := NewWriter(filepath.Join(parent, "out"), false)
			require.NoError(t, err)
			defer w.Abort()
			ti := base
			data := tt.edit(&ti, values(base.Shape))
			err = w.AddTensor(ti, data)
			require.ErrorIs(t, err, ErrInvalid)
			require.ErrorContains(t, err, tt.want)
			w.Abort()
			require.Empty(t, dirNames(t, parent))
		})
	}

	t.Run("same file twice", func(t *testing.T) {
		w, err := NewWriter(filepath.Join(t.TempDir(), "out"), false)
		require.NoError(t, err)
		defer w.Abort()
		require.NoError(t, w.AddTensor(base, values(base.Shape)))
		other := base
		other.File = "./" + base.File
		require.ErrorContains(t, w.AddTensor(other, values(base.Shape)), "file written twice")
	})
}

func TestWriterAfterCommit(t *testing.T) {
	m := validManifest()
	w, err := NewWriter(filepath.Join(t.TempDir(), "out"), false)
	require.NoError(t, err)
	for _, ti := range m.Tensors {
		require.NoError(t, w.AddTensor(ti, values(ti.Shape)))
	}
	require.NoError(t, w.Commit(m))
	w.Abort() // must not remove the committed set
	_, err = Open(w.dir)
	require.NoError(t, err)
	require.Error(t, w.Commit(m))
	require.Error(t, w.AddTensor(m.Tensors[0], values(m.Tensors[0].Shape)))
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestWriterCleansAbandonedTemps: a dump killed mid-way leaves its hidden
// temporary set; the next dump to the same place removes it.
func TestWriterCleansAbandonedTemps(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "set")
	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	stale := filepath.Join(parent, fmt.Sprintf(".set.tmp-%d-1", cmd.Process.Pid))
	require.NoError(t, os.MkdirAll(filepath.Join(stale, "hello"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(stale, "hello", "x.npy"), make([]byte, 1<<20), 0o644))
	w, err := NewWriter(dir, false)
	require.NoError(t, err)
	defer w.Abort()
	_, err = os.Stat(stale)
	require.True(t, os.IsNotExist(err), "abandoned temporary set left behind")
}

// TestWriterReplaceWithoutExchange: where directories cannot be swapped in
// one step, an existing set is still replaced (renamed aside, the new one
// in, the old one deleted) and nothing is left beside it.
func TestWriterReplaceWithoutExchange(t *testing.T) {
	defer func(f func(a, b string) error) { exchange = f }(exchange)
	exchange = func(a, b string) error { return fmt.Errorf("exchange: %w", errors.ErrUnsupported) }
	older := validManifest()
	older.Generator = map[string]any{"script": "older"}
	dir := writeSet(t, older)
	w, err := NewWriter(dir, true)
	require.NoError(t, err)
	defer w.Abort()
	m := validManifest()
	for _, ti := range m.Tensors {
		require.NoError(t, w.AddTensor(ti, values(ti.Shape)))
	}
	require.NoError(t, w.Commit(m))
	s, err := Open(dir)
	require.NoError(t, err)
	require.Equal(t, "go test", s.Manifest.Generator["script"])
	require.Equal(t, []string{"set"}, dirNames(t, filepath.Dir(dir)))
}
