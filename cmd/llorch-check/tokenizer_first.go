package main

import (
	"runtime/debug"

	"github.com/llorch/llorch-check/tokenizer"
)

// tokenizerFirst parses the tokenizer of the model at path (nil if it has
// none) before its weights load: a broken one is refused before a load
// of minutes, and its parse's garbage is given back while the heap is
// small instead of on top of the model: SmolLM2-135M's serve peaked at
// 317 MB, 21 MB over its model, in the parse after the load (bench
// notes 36). run keeps its order: it peaks later, in the comparisons, and
// measured 5 MB more with the parse first.
func tokenizerFirst(path string) (*tokenizer.Tokenizer, error) {
	tok, err := tokenizer.ForModel(path)
	if err != nil {
		return nil, err
	}
	debug.FreeOSMemory()
	return tok, nil
}
