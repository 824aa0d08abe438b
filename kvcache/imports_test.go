package kvcache

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNoFileFormatImports: the cache is memory management that knows a
// model only by its Shape, so it imports no file-format package (gguf,
// safetensors, weights) and no model code: binary16 conversion, which
// the formats share with it, lives in internal/ggmlnum.
func TestNoFileFormatImports(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	forbidden := []string{"gguf", "safetensors", "weights", "model", "tokenizer"}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		ast, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		require.NoError(t, err, f)
		for _, im := range ast.Imports {
			path, err := strconv.Unquote(im.Path.Value)
			require.NoError(t, err)
			for _, p := range forbidden {
				require.NotEqual(t, "github.com/llorch/llorch-check/"+p, path, "%s imports %s", f, path)
			}
		}
	}
}
