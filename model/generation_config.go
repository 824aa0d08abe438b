package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"

	"github.com/llorch/llorch-check/internal/regularfile"
)

// GenerationConfigFile is the file beside config.json where Hugging Face
// checkpoints list the tokens generation stops on: Llama 3.1's
// <|eot_id|> and Qwen2.5's <|im_end|> are there, not in config.json.
const GenerationConfigFile = "generation_config.json"

// maxGenerationConfig bounds the file: real ones are a few hundred bytes.
const maxGenerationConfig = 1 << 20

// addGenerationEOS appends to c's end-of-sequence ids those dir's
// generation_config.json lists that config.json does not, config.json's
// first kept first (the one a GGUF's tokenizer.ggml.eos_token_id holds),
// as transformers' generate stops on either. A missing file adds
// nothing; a malformed one, or an id outside the vocabulary, is an error
// naming the file and field.
func addGenerationEOS(c *Config, dir string) error {
	path := filepath.Join(dir, GenerationConfigFile)
	b, err := regularfile.ReadFileMax(path, maxGenerationConfig)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var raw rawConfig
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil || raw == nil {
		return fmt.Errorf("%s: not a JSON object", path)
	}
	if _, ok := raw.present("eos_token_id"); !ok {
		return nil
	}
	ids, err := raw.tokenIDs("eos_token_id", 0)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	eos := slices.Clone(c.EOSTokens())
	for _, id := range ids {
		if id >= c.VocabSize {
			return fmt.Errorf("%s: field \"eos_token_id\": id %d is outside the vocabulary of %d tokens", path, id, c.VocabSize)
		}
		if !slices.Contains(eos, id) {
			eos = append(eos, id)
		}
	}
	c.EOSTokenIDs = eos
	return nil
}
