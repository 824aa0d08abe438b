package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/internal/regularfile"
)

// llama.cpp's llama_token_type values GGUFKeys writes.
const ggufTokenNormal = 1

// GGUFKeys reads an HF directory's vocab.json and merges.txt and returns
// the tokenizer.ggml.* keys llama.cpp's convert_hf_to_gguf.py writes for
// GPT-2, in its order (BOS and EOS come with the model's keys): the model
// "gpt2" and pre-tokenizer "gpt-2", every token with its type (<|endoftext|>
// a control token, as in llama.cpp's own GPT-2 vocabulary file, and the
// unknown token), and the merges. FromGGUF reads them back.
func GGUFKeys(dir string, vocabSize int) ([]gguf.KV, error) {
	vocabPath, mergesPath := filepath.Join(dir, "vocab.json"), filepath.Join(dir, "merges.txt")
	var vocab map[string]int
	if err := readJSON(vocabPath, &vocab); err != nil {
		return nil, err
	}
	tokens, err := tokensByID(vocab, vocabPath)
	if err != nil {
		return nil, err
	}
	if len(tokens) != vocabSize || len(vocab) != vocabSize {
		return nil, fmt.Errorf("%s: %d tokens with ids up to %d, the model's vocabulary is %d; GGUF needs ids 0..%d, each once",
			vocabPath, len(vocab), len(tokens)-1, vocabSize, vocabSize-1)
	}
	data, err := regularfile.ReadFile(mergesPath)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w (GGUF conversion needs vocab.json and merges.txt)", err)
	}
	pairs, err := parseMergesTxt(data, mergesPath)
	if err != nil {
		return nil, err
	}
	merges := make([]string, len(pairs))
	for i, m := range pairs {
		merges[i] = m[0] + " " + m[1]
	}
	types := make([]int32, len(tokens))
	eot := -1
	for i, tok := range tokens {
		types[i] = ggufTokenNormal
		if tok == EndOfText {
			types[i], eot = ggufTokenControl, i
		}
	}
	kv := []gguf.KV{
		gguf.StringKV("tokenizer.ggml.model", "gpt2"),
		gguf.StringKV("tokenizer.ggml.pre", "gpt-2"),
		gguf.ArrayKV("tokenizer.ggml.tokens", gguf.TypeString, tokens),
		gguf.ArrayKV("tokenizer.ggml.token_type", gguf.TypeInt32, types),
		gguf.ArrayKV("tokenizer.ggml.merges", gguf.TypeString, merges),
	}
	if eot >= 0 {
		kv = append(kv, gguf.Uint32KV("tokenizer.ggml.unknown_token_id", uint32(eot)))
	}
	return kv, nil
}

// readJSON decodes a JSON file, naming it in errors.
func readJSON(path string, dst any) error {
	data, err := regularfile.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("tokenizer: %w (GGUF conversion needs vocab.json and merges.txt)", err)
	}
	if err != nil {
		return fmt.Errorf("tokenizer: %w", err)
	}
	if err := json.Unmarshal(data, dst); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrFormat, path, err)
	}
	return nil
}
