package main

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/term"
)

// progressFunc returns a reporter that rewrites one status line on stderr,
// or nil when stderr is not a terminal (CI logs stay clean).
func progressFunc(w io.Writer) (report func(string, ...any), done func()) {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil, func() {}
	}
	report = func(format string, args ...any) {
		fmt.Fprintf(f, "\r\033[K"+format, args...)
	}
	return report, func() { fmt.Fprint(f, "\r\033[K") }
}
