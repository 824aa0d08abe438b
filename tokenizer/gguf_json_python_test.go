package tokenizer

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/gguf"
)

// The reference side's converter (pytorch/gguf_vocab_json.py, written
// apart from this one) writes the same tokenizer.* keys as JSONGGUFKeys
// for SentencePiece tokenizer.json files: Mistral's (committed, a dummy
// prefix) and Gemma 3's (make tokenizer-gemma3; no prefix, user-defined
// tokens, 262144 rows dropping an added token and 262208 padding).
func TestGGUFVocabJSONPython(t *testing.T) {
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import numpy").Run(); err != nil {
		require.NotEqual(t, "true", os.Getenv("CI"), "gguf_vocab_json.py needs %s with numpy", py)
		t.Skipf("%s with numpy is needed: %v", py, err)
	}
	mistral := filepath.Join(llamaTestdata, "mistral-hf")
	for _, c := range []struct {
		name string
		dir  func(t *testing.T) string
		keys func(t *testing.T) []gguf.KV
		rows int
	}{
		{"mistral-hf", func(*testing.T) string { return mistral }, func(t *testing.T) []gguf.KV {
			kv, err := JSONGGUFKeys(mistral, 32000)
			require.NoError(t, err)
			return kv
		}, 32000},
		{"gemma3-262144", func(t *testing.T) string { return gemma3Dir(t) }, func(t *testing.T) []gguf.KV { return gemma3Keys(t, 262144) }, 262144},
		{"gemma3-262208", func(t *testing.T) string { return gemma3Dir(t) }, func(t *testing.T) []gguf.KV { return gemma3Keys(t, 262208) }, 262208},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := c.dir(t)
			out := filepath.Join(t.TempDir(), "vocab.gguf")
			cmd := exec.Command(py, "../pytorch/gguf_vocab_json.py", dir, strconv.Itoa(c.rows), out)
			msg, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", msg)
			f, err := gguf.Open(out)
			require.NoError(t, err)
			defer f.Close()
			kv := c.keys(t)
			written := 0
			for _, e := range f.KV {
				if strings.HasPrefix(e.Key, "tokenizer.") {
					written++
				}
			}
			assert.Equal(t, len(kv), written, "the number of tokenizer.* keys")
			for _, want := range kv {
				got, ok := f.Get(want.Key)
				if !assert.True(t, ok, "%s missing", want.Key) {
					continue
				}
				assert.Equal(t, want.Value.Type, got.Type, want.Key)
				assert.Equal(t, want.Value.V, got.V, want.Key)
			}
		})
	}
}
