package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	llorchcheck "github.com/llorch/llorch-check"
)

// builtinLabel stands for the copy of a built-in default wherever a path
// is shown: "(built in) tiny-gpt2".
const builtinLabel = "(built in) "

// builtinDefaults finds the defaults the binary carries (the root package
// llorchcheck) when no clone holds them. The model, tokenizer and reference
// set loaders read files by path, so each is read from a copy in the user's
// cache directory, checked against the binary's bytes on every use
// (llorchcheck.BuiltinCopy): a command killed half way leaves nothing
// behind but that one copy.
type builtinDefaults struct {
	mu   sync.Mutex
	dirs map[string]string // default -> its copy
}

var builtin builtinDefaults

// isBuiltin reports whether rel is a default the binary carries.
func isBuiltin(rel string) bool {
	return rel == llorchcheck.BuiltinModel || rel == llorchcheck.BuiltinReferences
}

// path is the copy of rel (defaultModel or defaultReferences).
func (b *builtinDefaults) path(rel string) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if dir, ok := b.dirs[rel]; ok {
		return dir, nil
	}
	var dir string
	var errs []error
	for _, cache := range builtinCaches() {
		d, err := llorchcheck.BuiltinCopy(cache, rel)
		if err == nil {
			dir = d
			break
		}
		errs = append(errs, err)
	}
	if dir == "" {
		return "", fmt.Errorf("default %s not found in this directory or its parents, and the copy built into the binary: %w", rel, errors.Join(errs...))
	}
	if b.dirs == nil {
		b.dirs = map[string]string{}
	}
	b.dirs[rel] = dir
	return dir, nil
}

// builtinCaches are where the copies may go, in order: llorch-check in
// the user's cache directory ($XDG_CACHE_HOME, ~/.cache), then in the
// temporary directory, for a container without a home or with a
// read-only one (the copy is checked against the binary's bytes on every
// use wherever it is).
func builtinCaches() []string {
	tmp := filepath.Join(os.TempDir(), fmt.Sprintf("llorch-check-%d", os.Getuid()))
	if dir, err := os.UserCacheDir(); err == nil {
		return []string{filepath.Join(dir, "llorch-check"), tmp}
	}
	return []string{tmp}
}

// display rewrites the paths of built-in copies in s (a path, an error
// message) as a user should read them: "(built in) tiny-gpt2", "(built in)
// references/tiny-gpt2/hello/logits.npy". Other paths stay as they are.
func (b *builtinDefaults) display(s string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	for rel, dir := range b.dirs {
		// dir is .../builtin-KEY/testdata/<rel without testdata/>.
		name := strings.TrimPrefix(rel, "testdata/")
		s = strings.ReplaceAll(s, dir, builtinLabel+name)
	}
	return s
}
