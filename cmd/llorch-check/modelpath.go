package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/llorch/llorch-check/internal/regularfile"
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

// checkModelPath refuses a model path that is neither a directory nor a
// regular file, and an HF directory whose config.json is not a regular
// file, before anything opens them: opening a named pipe blocks until a
// writer comes, deaf to SIGINT and SIGTERM. What is missing is left for
// the loader to name. The files opened later (weights, tokenizer, chat
// template) are refused where they are opened (internal/regularfile).
func checkModelPath(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return nil
	}
	if st.IsDir() {
		path = filepath.Join(path, "config.json")
		if _, err := os.Stat(path); err != nil {
			return nil
		}
	}
	if err := regularfile.Check(path); err != nil {
		return fmt.Errorf("--model: %w", err)
	}
	return nil
}
