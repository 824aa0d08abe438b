package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// TempPattern is the os.CreateTemp / os.MkdirTemp pattern for a temporary
// twin of path: hidden, beside it, naming the process that writes it, so
// that a later run can tell an abandoned twin from one being written.
func TempPattern(path string) string {
	return fmt.Sprintf(".%s.tmp-%d-*", filepath.Base(path), os.Getpid())
}

// CleanStale removes the temporary twins of path (files or directories)
// that an earlier, interrupted run left behind: those whose process is
// gone. A killed 124M dump once left hundreds of megabytes for ever.
func CleanStale(path string) {
	prefix := "." + filepath.Base(path) + ".tmp-"
	matches, _ := filepath.Glob(filepath.Join(filepath.Dir(path), glob(prefix)+"*"))
	for _, m := range matches {
		pidText, _, ok := strings.Cut(strings.TrimPrefix(filepath.Base(m), prefix), "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid == os.Getpid() || alive(pid) {
			continue
		}
		os.RemoveAll(m)
	}
}

// glob escapes the pattern characters of a literal file name.
func glob(s string) string {
	return strings.NewReplacer(`*`, `\*`, `?`, `\?`, `[`, `\[`, `\`, `\\`).Replace(s)
}
