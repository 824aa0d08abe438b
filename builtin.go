// Package llorchcheck holds the files the llorch-check command carries in
// its binary, so that an installed binary works outside a clone: the
// default tiny model (testdata/tiny-gpt2), its PyTorch reference set
// (testdata/references/tiny-gpt2) and GPT-2's vocabulary
// (testdata/gpt2-vocab). It lives at the module root because go:embed
// reaches only files below the embedding package.
package llorchcheck

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// The built-in directories, as the repository names them.
const (
	BuiltinModel      = "testdata/tiny-gpt2"
	BuiltinReferences = "testdata/references/tiny-gpt2"
	builtinVocab      = "testdata/gpt2-vocab"
)

// sharedVocab are the model's files read from the vocabulary directory.
var sharedVocab = []string{"vocab.json", "merges.txt"}

// BuiltinFiles lists the files of a built-in directory (BuiltinModel or
// BuiltinReferences), slash-separated and relative to it, in lexical order.
func BuiltinFiles(dir string) ([]string, error) {
	if dir != BuiltinModel && dir != BuiltinReferences {
		return nil, fmt.Errorf("%s is not built in (%s and %s are)", dir, BuiltinModel, BuiltinReferences)
	}
	if !carried {
		return nil, errors.New("this binary was built without them (-tags nobuiltin)")
	}
	var files []string
	err := fs.WalkDir(builtin, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files = append(files, strings.TrimPrefix(p, dir+"/"))
		return nil
	})
	if err != nil {
		return nil, err
	}
	if dir == BuiltinModel {
		files = append(files, sharedVocab...)
		slices.Sort(files)
	}
	return files, nil
}

// ReadBuiltin returns a file of a built-in directory, name slash-separated
// and relative to it.
func ReadBuiltin(dir, name string) ([]byte, error) {
	if dir != BuiltinModel && dir != BuiltinReferences {
		return nil, &fs.PathError{Op: "read", Path: path.Join(dir, name), Err: fs.ErrNotExist}
	}
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "read", Path: path.Join(dir, name), Err: fs.ErrInvalid}
	}
	if dir == BuiltinModel && slices.Contains(sharedVocab, name) {
		return builtin.ReadFile(path.Join(builtinVocab, name))
	}
	return builtin.ReadFile(path.Join(dir, name))
}

// BuiltinCopy returns a directory under cache holding an exact copy of
// the built-in directory dir (BuiltinModel or BuiltinReferences), at the
// path the repository gives it (cache/builtin-KEY/testdata/tiny-gpt2, KEY
// naming this binary's files), for code that reads files by path. An
// existing copy is compared byte for byte with the binary's files on every
// call and written again, whole, if anything differs; a copy is written
// into a temporary directory beside it and renamed into place, so
// processes sharing cache never see half of one. The files are read-only.
func BuiltinCopy(cache, dir string) (string, error) {
	files, err := BuiltinFiles(dir)
	if err != nil {
		return "", err
	}
	key, err := builtinKey()
	if err != nil {
		return "", err
	}
	final := filepath.Join(cache, "builtin-"+key, filepath.FromSlash(dir))
	if sameFiles(final, dir, files) {
		return final, nil
	}
	parent := filepath.Dir(final)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("copying the built-in %s: %w", dir, err)
	}
	tmp, err := os.MkdirTemp(parent, ".tmp-"+path.Base(dir)+"-")
	if err != nil {
		return "", fmt.Errorf("copying the built-in %s: %w", dir, err)
	}
	defer os.RemoveAll(tmp) // nothing left once renamed
	if err := writeFiles(tmp, dir, files); err != nil {
		return "", err
	}
	for try := range 3 {
		if err = os.Rename(tmp, final); err == nil || sameFiles(final, dir, files) {
			return final, nil // ours, or a good copy another process put there first
		}
		// A damaged copy is in the way: move it aside whole, never empty
		// it in place, where another process may be reading it (it keeps
		// what it opened), then try again. Another process repairing it
		// at once may move it first, or put its own copy there.
		aside := fmt.Sprintf("%s.damaged-%d", tmp, try)
		if err := os.Rename(final, aside); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("replacing the damaged copy of the built-in %s: %w", dir, err)
		}
		defer os.RemoveAll(aside)
	}
	return "", fmt.Errorf("copying the built-in %s: %w", dir, err)
}

// builtinKey names the binary's built-in files: a digest of every file's
// name and length and of the reference set's manifest (which records the
// weights' sha256). Copies are compared byte for byte anyway, so the key
// only keeps binaries of different files from taking turns rewriting one
// copy.
func builtinKey() (string, error) {
	h := sha256.New()
	for _, dir := range []string{BuiltinModel, BuiltinReferences} {
		files, err := BuiltinFiles(dir)
		if err != nil {
			return "", err
		}
		for _, name := range files {
			data, err := ReadBuiltin(dir, name)
			if err != nil {
				return "", err
			}
			fmt.Fprintf(h, "%s/%s %d\n", dir, name, len(data))
		}
	}
	manifest, err := ReadBuiltin(BuiltinReferences, "manifest.json")
	if err != nil {
		return "", err
	}
	h.Write(manifest)
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// sameFiles reports whether dir on disk holds exactly the files of the
// built-in dir, byte for byte, as regular files.
func sameFiles(disk, dir string, files []string) bool {
	n := 0
	err := filepath.WalkDir(disk, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			return errDiffers
		}
		n++
		return nil
	})
	if err != nil || n != len(files) {
		return false
	}
	for _, name := range files {
		want, err := ReadBuiltin(dir, name)
		if err != nil {
			return false
		}
		got, err := os.ReadFile(filepath.Join(disk, filepath.FromSlash(name)))
		if err != nil || !bytes.Equal(got, want) {
			return false
		}
	}
	return true
}

var errDiffers = errors.New("differs")

// writeFiles writes the built-in dir's files under out, read-only.
func writeFiles(out, dir string, files []string) error {
	for _, name := range files {
		data, err := ReadBuiltin(dir, name)
		if err != nil {
			return fmt.Errorf("reading the built-in %s: %w", dir, err)
		}
		dst := filepath.Join(out, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return fmt.Errorf("copying the built-in %s: %w", dir, err)
		}
		if err := os.WriteFile(dst, data, 0o444); err != nil {
			return fmt.Errorf("copying the built-in %s: %w", dir, err)
		}
	}
	return nil
}
