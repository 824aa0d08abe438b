package main

import (
	"fmt"

	"github.com/llorch/llorch-check/loader"
)

// modelPath is --model, or the default model, refused when it would make
// the loader wait for ever (checkModelPath).
func modelPath(flag string) (string, error) {
	path, err := pathOrDefault(flag, defaultModel)
	if err != nil {
		return "", err
	}
	return path, checkModelPath(path)
}

// checkModelPath is loader.CheckPath, naming --model.
func checkModelPath(path string) error {
	if err := loader.CheckPath(path); err != nil {
		return fmt.Errorf("--model: %w", err)
	}
	return nil
}
