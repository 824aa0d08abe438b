// Package buildid names the build of the running executable, for files
// one build writes for itself and another must not read (a weights cache
// holds matrices in the kernels' layouts, which any change of the code
// may move).
package buildid

import (
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"sync"
)

var once = sync.OnceValues(read)

// ID is the Go toolchain's build ID of the running executable (its ELF
// note), or where there is none the sha256 of the executable's bytes.
func ID() (string, error) { return once() }

func read() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("the executable: %w", err)
	}
	if id, ok := elfNote(exe); ok {
		return "go:" + id, nil
	}
	f, err := os.Open(exe)
	if err != nil {
		return "", fmt.Errorf("the executable: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("reading %s: %w", exe, err)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// elfNote reads the .note.go.buildid section: a note header (name size,
// descriptor size, type), the name "Go\x00\x00" and the ID.
func elfNote(path string) (string, bool) {
	f, err := elf.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	s := f.Section(".note.go.buildid")
	if s == nil {
		return "", false
	}
	b, err := s.Data()
	if err != nil || len(b) < 16 {
		return "", false
	}
	nameSize, descSize := f.ByteOrder.Uint32(b[0:]), f.ByteOrder.Uint32(b[4:])
	start := 12 + (uint64(nameSize)+3)&^3
	if start+uint64(descSize) > uint64(len(b)) || descSize == 0 {
		return "", false
	}
	return string(b[start : start+uint64(descSize)]), true
}
