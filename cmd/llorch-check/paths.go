package main

import (
	"path/filepath"
	"strings"
)

// realPath is path made absolute with its symbolic links resolved: all of
// them if it exists, else its directory's, so that an output not yet
// written compares with an input it would replace.
func realPath(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real, nil
	}
	if real, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		return filepath.Join(real, filepath.Base(abs)), nil
	}
	return abs, nil
}

// realPaths is realPath of a and of b.
func realPaths(a, b string) (string, string, error) {
	ra, err := realPath(a)
	if err != nil {
		return "", "", err
	}
	rb, err := realPath(b)
	return ra, rb, err
}

// within says whether path is dir or lies inside it, both real paths.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
