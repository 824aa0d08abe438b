// Command benchcorpus writes the tokenizer benchmark corpus (see
// tokenizer/benchcorpus) to a file, so a peer implementation can
// encode the very same bytes.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/llorch/llorch-check/tokenizer/benchcorpus"
)

func main() {
	size := flag.Int("size", benchcorpus.DefaultSize, "corpus size in bytes")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: benchcorpus [-size N] OUT")
		os.Exit(2)
	}
	text, err := benchcorpus.Build(*size)
	if err == nil {
		err = os.WriteFile(flag.Arg(0), []byte(text), 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
