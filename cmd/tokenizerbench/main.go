// Command tokenizerbench measures the tokenizer package exactly as
// e2e/bench-tokenizer/bench.mjs measures the peer: one cold pass with an
// empty cache, then the best of the warm passes; it prints the same JSON
// line.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/llorch/llorch-check/tokenizer"
)

func main() {
	vocab := flag.String("vocab", "testdata/gpt2-vocab/vocab.json", "vocab.json")
	merges := flag.String("merges", "testdata/gpt2-vocab/merges.txt", "merges.txt")
	passes := flag.Int("passes", 5, "warm passes")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: tokenizerbench [flags] CORPUS")
		os.Exit(2)
	}
	data, err := os.ReadFile(flag.Arg(0))
	if err != nil {
		fail(err)
	}
	tok, err := tokenizer.LoadFiles(*vocab, *merges)
	if err != nil {
		fail(err)
	}
	text := string(data)
	mb := float64(len(text)) / 1e6
	start := time.Now()
	ids := tok.Encode(text)
	cold := mb / time.Since(start).Seconds()
	warm := 0.0
	for range *passes {
		start = time.Now()
		ids = tok.Encode(text)
		warm = max(warm, mb/time.Since(start).Seconds())
	}
	var sum uint32
	for _, id := range ids {
		sum = sum*31 + uint32(id)
	}
	json.NewEncoder(os.Stdout).Encode(map[string]any{
		"impl": "llorch tokenizer (" + runtime.Version() + ")", "cold_mbps": cold, "warm_mbps": warm,
		"tokens": len(ids), "checksum": sum,
	})
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
