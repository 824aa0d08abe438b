package main

import (
	"errors"
	"os"

	"github.com/llorch/llorch-check/references"
	"github.com/llorch/llorch-check/tokenizer"
)

// checkSetTokenizer refuses a reference set whose token ids came from
// another tokenizer than the model directory's (model.tokenizer_sha256;
// references.Set.CheckTokenizer). It runs before the weights load: hashing
// a tokenizer file costs milliseconds, loading an 8B model minutes and
// tens of gigabytes. modelFlag is --model ("" for the default model).
//
// Nothing is checked for a GGUF model file (its vocabulary is part of the
// weights file, which the weights check covers), a model directory without
// a tokenizer (no text is encoded or decoded), or a set that records no
// tokenizer (made before the field).
func checkSetTokenizer(set *references.Set, modelFlag string) error {
	if set.Manifest.Model.TokenizerSHA256 == "" {
		return nil
	}
	path, err := modelPath(modelFlag)
	if err != nil {
		return err
	}
	return checkDirTokenizer(set, path)
}

// checkDirTokenizer is checkSetTokenizer for a resolved model path.
func checkDirTokenizer(set *references.Set, path string) error {
	if st, err := os.Stat(path); err != nil || !st.IsDir() {
		return nil // a GGUF file, or a path the loader reports on
	}
	name, paths, err := tokenizer.Source(path)
	if errors.Is(err, tokenizer.ErrNoTokenizer) {
		return nil
	}
	if err != nil {
		return err
	}
	return set.CheckTokenizer(name, paths)
}
