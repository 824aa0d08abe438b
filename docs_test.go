package llorchcheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// userDocs are the documents a user of the repository reads: the README,
// docs/ and the reference-set format.
func userDocs(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join("docs", "*.md"))
	require.NoError(t, err)
	require.Contains(t, docs, filepath.Join("docs", "spec.md"))
	require.Contains(t, docs, filepath.Join("docs", "api.md"))
	return append([]string{"README.md", filepath.Join("references", "FORMAT.md")}, docs...)
}

// mdLink is a Markdown link's target: [text](target) or [text](<target>).
var mdLink = regexp.MustCompile(`\]\(<?([^)<>\s]+)>?\)`)

// TestDocLinksResolve: every relative link of the user documents names a
// file or directory of the repository.
func TestDocLinksResolve(t *testing.T) {
	for _, doc := range userDocs(t) {
		t.Run(doc, func(t *testing.T) {
			data, err := os.ReadFile(doc)
			require.NoError(t, err)
			links := 0
			for _, m := range mdLink.FindAllStringSubmatch(string(data), -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				target, _, _ = strings.Cut(target, "#")
				path := filepath.Join(filepath.Dir(doc), filepath.FromSlash(target))
				require.True(t, filepath.IsLocal(path), "%s links %s, outside the repository", doc, m[1])
				_, err := os.Stat(path)
				require.NoError(t, err, "%s links %s", doc, m[1])
				links++
			}
			if doc == "README.md" {
				require.Greater(t, links, 10, "the link pattern found too few links in README.md")
			}
		})
	}
}

// outside names the contract files this repository does not hold: the
// project's upstream specification and API, upper-case files in a shared
// directory beside the clone. The repository's own are docs/spec.md and
// docs/api.md (lower case).
var outside = regexp.MustCompile(`\.\./shared|\bSPEC\.md|\bAPI\.md`)

// TestNoContractOutsideTheRepository: no user document, --help text or
// HTTP answer sends a user to a file the repository does not hold, and
// every docs/ file a message names exists.
func TestNoContractOutsideTheRepository(t *testing.T) {
	for _, doc := range userDocs(t) {
		data, err := os.ReadFile(doc)
		require.NoError(t, err)
		for i, line := range strings.Split(string(data), "\n") {
			require.False(t, outside.MatchString(line), "%s:%d refers to a file outside the repository: %s", doc, i+1, line)
		}
	}
	docPath := regexp.MustCompile(`docs/[a-z0-9-]+\.md`)
	literals := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			literals++
			pos := fset.Position(lit.Pos())
			require.False(t, outside.MatchString(s), "%s: a message refers to a file outside the repository: %q", pos, s)
			for _, p := range docPath.FindAllString(s, -1) {
				_, err := os.Stat(filepath.FromSlash(p))
				require.NoError(t, err, "%s names %s", pos, p)
			}
			return true
		})
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, literals, 1000, "too few string literals read")
}

// TestCommentsNameFilesThatExist: no comment of the Go sources (tests
// included), and no line of the Python and shell sources, sends a reader
// to a contract file the repository does not hold.
func TestCommentsNameFilesThatExist(t *testing.T) {
	read := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		switch {
		case d.IsDir():
			return nil
		case strings.HasSuffix(path, ".go"):
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			for _, g := range f.Comments {
				for _, c := range g.List {
					require.False(t, outside.MatchString(c.Text), "%s: a comment cites a file outside the repository: %s", fset.Position(c.Pos()), c.Text)
				}
			}
		case strings.HasSuffix(path, ".py") || strings.HasSuffix(path, ".sh"):
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for i, line := range strings.Split(string(data), "\n") {
				require.False(t, outside.MatchString(line), "%s:%d cites a file outside the repository: %s", path, i+1, line)
			}
		default:
			return nil
		}
		read++
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, read, 500, "too few source files read")
}

// TestREADMEIsAFrontDoor: the README stays short enough to read in one
// sitting (issue #42: under 300 lines) and links every page of docs/, so
// what moved out of it can still be found from it.
func TestREADMEIsAFrontDoor(t *testing.T) {
	data, err := os.ReadFile("README.md")
	require.NoError(t, err)
	require.Less(t, strings.Count(string(data), "\n"), 300, "README.md has grown past 300 lines: move detail to a page of docs/")
	linked := map[string]bool{}
	for _, m := range mdLink.FindAllStringSubmatch(string(data), -1) {
		target, _, _ := strings.Cut(m[1], "#")
		linked[filepath.Clean(filepath.FromSlash(target))] = true
	}
	pages, err := filepath.Glob(filepath.Join("docs", "*.md"))
	require.NoError(t, err)
	require.NotEmpty(t, pages)
	for _, p := range pages {
		require.True(t, linked[p], "README.md does not link %s", p)
	}
}
