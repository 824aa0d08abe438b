// Package benchcorpus assembles the tokenizer benchmark text: English prose
// and Go and Python code, from files that come with the Go toolchain and
// Debian, so that megabytes of text need not be committed. The same
// machine always gives the same bytes; files that are missing are skipped.
package benchcorpus

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
)

// DefaultSize is the benchmark's corpus size in bytes.
const DefaultSize = 4 << 20

func prose(goroot string) []string {
	lic := "/usr/share/common-licenses/"
	return []string{
		filepath.Join(goroot, "src/testdata/Isaac.Newton-Opticks.txt"),
		filepath.Join(goroot, "doc/go_spec.html"),
		filepath.Join(goroot, "doc/go_mem.html"),
		filepath.Join(goroot, "doc/godebug.md"),
		filepath.Join(goroot, "CONTRIBUTING.md"),
		lic + "GPL-3", lic + "GPL-2", lic + "LGPL-2.1", lic + "Apache-2.0",
		lic + "GFDL-1.3", lic + "MPL-2.0", lic + "Artistic",
	}
}

func code(goroot string) []string {
	var files []string
	for _, pkg := range []string{"fmt", "strings", "bufio", "encoding/json", "net/http", "go/parser", "go/types", "runtime"} {
		m, _ := filepath.Glob(filepath.Join(goroot, "src", pkg, "*.go"))
		sort.Strings(m)
		files = append(files, m...)
	}
	py, _ := filepath.Glob("/usr/lib/python3*/")
	sort.Strings(py)
	if len(py) > 0 {
		for _, mod := range []string{"argparse", "typing", "dataclasses", "inspect", "subprocess",
			"json/decoder", "json/encoder", "textwrap", "pathlib", "collections/__init__", "functools", "shutil"} {
			files = append(files, filepath.Join(py[0], mod+".py"))
		}
	}
	return files
}

// Build returns about size bytes (never more) of text: prose and code
// taken alternately in chunks of up to 16 KiB cut at line ends, so that the
// mix is the same in any prefix.
func Build(size int) (string, error) {
	goroot := runtime.GOROOT()
	streams := [2]string{
		strings.Join(readAll(prose(goroot)), "\n"),
		strings.Join(readAll(code(goroot)), "\n"),
	}
	if streams[0] == "" || streams[1] == "" {
		return "", errors.New("benchcorpus: no prose or no code files found under GOROOT " + goroot)
	}
	var sb strings.Builder
	pos := [2]int{}
	for turn := 0; ; turn++ {
		s := turn % 2
		if pos[s] >= len(streams[s]) {
			pos[s] = 0 // cycle the shorter stream
		}
		chunk := cutAtLine(streams[s][pos[s]:min(len(streams[s]), pos[s]+16<<10)])
		pos[s] += len(chunk)
		if left := size - sb.Len(); len(chunk) >= left {
			sb.WriteString(cutAtLine(chunk[:left]))
			return sb.String(), nil
		}
		sb.WriteString(chunk)
	}
}

// cutAtLine drops a trailing partial line, if s has a line end at all.
func cutAtLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i > 0 {
		return s[:i+1]
	}
	return s
}

func readAll(paths []string) []string {
	var out []string
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			out = append(out, string(b))
		}
	}
	return out
}
