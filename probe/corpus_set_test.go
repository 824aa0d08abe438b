package probe

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/llorch/llorch-check/internal/fixture"
)

// FuzzOpenCorpus: whatever corpus.json says about the committed corpus
// set's files, openCorpus reads a consistent set or refuses it with an
// error; it never panics or reads out of range.
func FuzzOpenCorpus(f *testing.F) {
	good, err := os.ReadFile(filepath.Join(corpusDir(), corpusFile))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(`{"format_version":1,"kind":"corpus","n_ctx":4,"chunks":1,"scored_from":2,"positions":1,"top_k":1,"tokens":[1,2,3,4]}`))
	f.Add([]byte(`{"format_version":1,"kind":"corpus","n_ctx":4611686018427387904,"chunks":4,"scored_from":0,"positions":-4,"top_k":1,"tokens":[]}`))
	dir := fixture.CopyDir(f, corpusDir())
	set := tinySet(f)
	f.Fuzz(func(t *testing.T, manifest []byte) {
		if err := os.WriteFile(filepath.Join(dir, corpusFile), manifest, 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := openCorpus(dir, set)
		if err != nil {
			return
		}
		m := c.manifest
		for ch := range m.Chunks {
			_ = c.chunk(ch)
		}
		for p := range m.Positions {
			_ = c.position(p)
		}
	})
}
