package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/model"
)

// llama.cpp's llama_token_type values that convert writes.
const (
	tokenTypeNormal  = 1
	tokenTypeControl = 3
)

// tokenizerKVs reads an HF directory's vocab.json and merges.txt and
// returns the tokenizer.ggml.* keys llama.cpp's convert_hf_to_gguf.py
// writes for GPT-2, in its order (BOS and EOS come with the model's keys). <|endoftext|> is a control token, as in
// llama.cpp's own GPT-2 vocabulary file; GPT-2's unknown token is also
// <|endoftext|>.
func tokenizerKVs(dir string, cfg model.Config) ([]gguf.KV, error) {
	tokens, err := readVocab(filepath.Join(dir, "vocab.json"))
	if err != nil {
		return nil, err
	}
	merges, err := readMerges(filepath.Join(dir, "merges.txt"))
	if err != nil {
		return nil, err
	}
	if len(tokens) != cfg.VocabSize {
		return nil, fmt.Errorf("%s: %d tokens, config.json vocab_size is %d", filepath.Join(dir, "vocab.json"), len(tokens), cfg.VocabSize)
	}
	types := make([]int32, len(tokens))
	eot := int64(-1)
	for i, tok := range tokens {
		types[i] = tokenTypeNormal
		if tok == "<|endoftext|>" {
			types[i], eot = tokenTypeControl, int64(i)
		}
	}
	kv := []gguf.KV{
		str("tokenizer.ggml.model", "gpt2"),
		str("tokenizer.ggml.pre", "gpt-2"),
		{Key: "tokenizer.ggml.tokens", Value: gguf.Value{Type: gguf.TypeArray, V: gguf.Array{Elem: gguf.TypeString, Values: tokens}}},
		{Key: "tokenizer.ggml.token_type", Value: gguf.Value{Type: gguf.TypeArray, V: gguf.Array{Elem: gguf.TypeInt32, Values: types}}},
		{Key: "tokenizer.ggml.merges", Value: gguf.Value{Type: gguf.TypeArray, V: gguf.Array{Elem: gguf.TypeString, Values: merges}}},
	}
	if eot >= 0 {
		kv = append(kv, u32("tokenizer.ggml.unknown_token_id", uint32(eot)))
	}
	return kv, nil
}

func str(key, v string) gguf.KV {
	return gguf.KV{Key: key, Value: gguf.Value{Type: gguf.TypeString, V: v}}
}

func u32(key string, v uint32) gguf.KV {
	return gguf.KV{Key: key, Value: gguf.Value{Type: gguf.TypeUint32, V: v}}
}

// readVocab returns vocab.json's tokens by id; the ids must be exactly
// 0..n-1, since GGUF stores tokens as a list.
func readVocab(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w (convert needs vocab.json and merges.txt)", err)
	}
	var vocab map[string]int
	if err := json.Unmarshal(data, &vocab); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	tokens := make([]string, len(vocab))
	seen := make([]bool, len(vocab))
	for tok, id := range vocab {
		if id < 0 || id >= len(vocab) || seen[id] {
			return nil, fmt.Errorf("%s: token %q has id %d; ids must be 0..%d, each used once", path, tok, id, len(vocab)-1)
		}
		tokens[id], seen[id] = tok, true
	}
	return tokens, nil
}

// readMerges returns merges.txt's "left right" lines in rank order.
func readMerges(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w (convert needs vocab.json and merges.txt)", err)
	}
	defer f.Close()
	var merges []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimRight(sc.Text(), "\r")
		if s == "" || (line == 1 && strings.HasPrefix(s, "#version")) {
			continue
		}
		if l, r, ok := strings.Cut(s, " "); !ok || l == "" || r == "" || strings.Contains(r, " ") {
			return nil, fmt.Errorf("%s:%d: %q is not a \"left right\" merge", path, line, s)
		}
		merges = append(merges, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return merges, nil
}
