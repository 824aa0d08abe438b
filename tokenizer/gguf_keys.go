package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

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
	data, err := regularfile.ReadFileMax(mergesPath, regularfile.MaxMergesTxt)
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

// ConvertKeys are the tokenizer.* keys a GGUF file converted from the HF
// model in dir carries. GPT-2's are built from its vocab.json and
// merges.txt (GGUFKeys). The Llama family's (llama true) are copied from
// a tokenizer GGUF (FileGGUFKeys) when from names one; else converted
// from dir's tokenizer.json (JSONGGUFKeys); else copied from the first
// *.gguf (by name) in dir that has them, as Load finds an HF model's
// tokenizer, such as llama.cpp's vocabulary file ggml-vocab-*.gguf.
// Either must hold vocabSize tokens (tokenizer.json's are padded to it).
func ConvertKeys(dir, from string, vocabSize int, llama bool) ([]gguf.KV, error) {
	if !llama {
		return GGUFKeys(dir, vocabSize)
	}
	if from == "" {
		if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err == nil {
			return JSONGGUFKeys(dir, vocabSize)
		}
		ggufs, _ := filepath.Glob(filepath.Join(dir, "*.gguf"))
		slices.Sort(ggufs)
		for _, p := range ggufs {
			if f, err := gguf.Open(p); err == nil {
				_, ok := f.Get("tokenizer.ggml.tokens")
				f.Close()
				if ok {
					from = p
					break
				}
			}
		}
	}
	if from == "" {
		return nil, fmt.Errorf("%s has no tokenizer: neither tokenizer.json nor a tokenizer GGUF (a *.gguf holding tokenizer.ggml.* keys, such as llama.cpp's vocabulary file ggml-vocab-*.gguf); "+
			"give one with --tokenizer", dir)
	}
	tok, err := FileGGUFKeys(from)
	if err != nil {
		return nil, err
	}
	for _, e := range tok {
		if a, ok := e.Value.V.(gguf.Array); ok && e.Key == "tokenizer.ggml.tokens" && a.Len() != vocabSize {
			return nil, fmt.Errorf("%s: %d tokens, the model's vocabulary is %d", from, a.Len(), vocabSize)
		}
	}
	return tok, nil
}

// FileGGUFKeys reads the tokenizer.* keys of a GGUF file, in its order;
// an error if it has no tokenizer.ggml.tokens.
func FileGGUFKeys(path string) ([]gguf.KV, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, ok := f.Get("tokenizer.ggml.tokens"); !ok {
		return nil, fmt.Errorf("%s: no tokenizer.ggml.tokens: not a tokenizer GGUF", path)
	}
	var tok []gguf.KV
	for _, e := range f.KV {
		if strings.HasPrefix(e.Key, "tokenizer.") {
			tok = append(tok, e)
		}
	}
	return tok, nil
}

// readJSON decodes vocab.json, naming it in errors.
func readJSON(path string, dst any) error {
	data, err := regularfile.ReadFileMax(path, regularfile.MaxVocabJSON)
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
