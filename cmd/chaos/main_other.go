//go:build !unix

package main

import (
	"fmt"
	"os"
)

// On a system without named pipes and SIGTERM (Windows) the probes cannot
// run; the command says so instead of leaving the module unbuildable there.
func main() {
	fmt.Fprintln(os.Stderr, "chaos: runs on Unix systems only (its probes use named pipes and SIGTERM)")
	os.Exit(2)
}
