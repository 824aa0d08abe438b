package main

import (
	"go/parser"
	"go/token"
	"strings"
	"testing"

	"github.com/llorch/llorch-check/model"
	"github.com/stretchr/testify/require"
)

// TestHelpNamesEveryFamily: the --help of the commands that run a forward
// names every architecture the model package implements, not GPT-2 alone
// (issue #42 item 10), from the registry, so that adding a family does not
// touch the help (issue #41); the command's doc comment names the families
// and points there.
func TestHelpNamesEveryFamily(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", nil, parser.PackageClauseOnly|parser.ParseComments)
	require.NoError(t, err)
	doc := f.Doc.Text()
	for _, want := range []string{"GPT-2", "Llama", "Qwen", "Mistral", "Phi-3", "Gemma", "mixtures of experts", "llorch-check --help"} {
		require.Contains(t, doc, want, "main.go's doc comment")
	}
	texts := map[string]string{}
	for _, args := range [][]string{{"--help"}, {"run", "--help"}, {"generate", "--help"}} {
		code, out, _ := runCLI(t, args...)
		require.Equal(t, exitOK, code)
		texts[strings.Join(args, " ")] = out
	}
	for where, text := range texts {
		// GPT-2 as prose spells it is the architecture gpt2.
		flat := strings.ReplaceAll(strings.ToLower(text), "gpt-2", "gpt2")
		for _, a := range model.Architectures {
			require.Contains(t, flat, a.Name, "%s does not name %s", where, a.Name)
		}
	}
}
