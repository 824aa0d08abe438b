package references

import (
	"os"
	"path/filepath"
	"strings"
)

// The sets a model finds beside itself without being told (FORMAT.md):
// MODEL_PARENT/references/NAME for a model directory or file NAME (a GGUF
// file's name without .gguf), and for a float16 KV cache that set's
// f16-kv twin, SET-f16kv.

// F16KVSuffix names a set of the f16-kv profile beside the plain set it
// twins: testdata/references/tiny-gpt2-f16kv beside tiny-gpt2.
const F16KVSuffix = "-f16kv"

// BesideModel is the set directory beside modelPath, if one exists.
func BesideModel(modelPath string) (string, bool) {
	clean := filepath.Clean(modelPath)
	name := strings.TrimSuffix(filepath.Base(clean), ".gguf")
	dir := filepath.Join(filepath.Dir(clean), "references", name)
	return dir, isDir(dir)
}

// F16KVTwin is dir's f16-kv twin (dir + F16KVSuffix) when it exists, else
// dir.
func F16KVTwin(dir string) string {
	if isDir(dir + F16KVSuffix) {
		return dir + F16KVSuffix
	}
	return dir
}

func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}
