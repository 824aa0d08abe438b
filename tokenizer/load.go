package tokenizer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/internal/regularfile"
)

// Load finds the tokenizer of a model directory, trying in order
// vocab.json + merges.txt, tokenizer.json, then the *.gguf files (by name)
// that carry tokenizer metadata (Source). Without any it returns an error
// wrapping ErrNoTokenizer; callers decide whether that matters (only text
// needs a tokenizer).
func Load(dir string) (*Tokenizer, error) {
	name, paths, err := Source(dir)
	if err != nil {
		return nil, err
	}
	switch name {
	case "vocab.json":
		return LoadFiles(paths[0], paths[1])
	case "tokenizer.json":
		return LoadTokenizerJSON(paths[0])
	}
	f, err := gguf.Open(paths[0])
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	defer f.Close()
	t, err := FromGGUF(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", paths[0], err)
	}
	return t, nil
}

// Source names the files Load reads from a model directory: name is
// "vocab.json" (paths: vocab.json, merges.txt), "tokenizer.json", or the
// base name of the first *.gguf by name with tokenizer.ggml.tokens (such
// as the tiny models' tokenizer.gguf). A reference set records name and
// the sha256 of paths' bytes one after another (references.ModelInfo's
// TokenizerFile and TokenizerSHA256). Without any, the error wraps
// ErrNoTokenizer.
func Source(dir string) (name string, paths []string, err error) {
	st, err := os.Stat(dir)
	if err != nil {
		return "", nil, fmt.Errorf("tokenizer: %w", err)
	}
	if !st.IsDir() {
		return "", nil, fmt.Errorf("tokenizer: %s is not a directory", dir)
	}
	vocab, merges := filepath.Join(dir, "vocab.json"), filepath.Join(dir, "merges.txt")
	hasVocab, hasMerges := exists(vocab), exists(merges)
	if hasVocab && hasMerges {
		return "vocab.json", []string{vocab, merges}, nil
	}
	if tj := filepath.Join(dir, "tokenizer.json"); exists(tj) {
		return "tokenizer.json", []string{tj}, nil
	}
	ggufs, _ := filepath.Glob(filepath.Join(dir, "*.gguf"))
	sort.Strings(ggufs)
	for _, p := range ggufs {
		f, err := gguf.Open(p)
		if err != nil {
			return "", nil, fmt.Errorf("tokenizer: %w", err)
		}
		_, hasTok := f.Get("tokenizer.ggml.tokens")
		f.Close()
		if hasTok {
			return filepath.Base(p), []string{p}, nil
		}
	}
	hint := ""
	if hasVocab != hasMerges {
		hint = " (vocab.json and merges.txt must both be present)"
	}
	return "", nil, fmt.Errorf("%w in %s: looked for vocab.json + merges.txt, tokenizer.json, *.gguf with tokenizer metadata%s",
		ErrNoTokenizer, dir, hint)
}

// configVocabSize is config.json's vocab_size in the HF directory dir, or
// 0: the model's embedding rows, which may outnumber the tokenizer's ids.
// The model's loader validates the file; here it only pads.
func configVocabSize(dir string) int {
	cfg, err := readJSONObject(filepath.Join(dir, "config.json"), regularfile.MaxConfigJSON)
	var n int
	if err != nil || json.Unmarshal(cfg["vocab_size"], &n) != nil {
		return 0
	}
	return n
}

// ForModel is the tokenizer that goes with the model at path, as
// loader.Load takes it: a file is a GGUF model, whose tokenizer is its own
// metadata, never another file that happens to share its directory; a
// directory is an HF model, whose tokenizer is its files (Load). Without
// one it returns nil and no error: only text needs a tokenizer, and the
// commands that need text say so.
func ForModel(path string) (*Tokenizer, error) {
	if st, err := os.Stat(path); err != nil || st.IsDir() {
		tok, err := Load(path)
		if errors.Is(err, ErrNoTokenizer) {
			return nil, nil
		}
		if err == nil {
			tok.PadTo(configVocabSize(path))
		}
		return tok, err
	}
	ggufFile := path
	f, err := gguf.Open(ggufFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, ok := f.Get("tokenizer.ggml.tokens"); !ok {
		return nil, nil
	}
	tok, err := FromGGUF(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ggufFile, err)
	}
	return tok, nil
}

// exists says whether path is there and not a directory: a special file
// is then refused by name where it is read, not passed over.
func exists(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir()
}

// LoadFiles loads GPT-2's vocab.json (token -> id) and merges.txt (one
// "left right" pair per line in rank order, after a "#version" line).
func LoadFiles(vocabPath, mergesPath string) (*Tokenizer, error) {
	data, err := regularfile.ReadFileMax(vocabPath, regularfile.MaxVocabJSON)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	var vocab map[string]int
	if err := json.Unmarshal(data, &vocab); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrFormat, vocabPath, err)
	}
	tokens, err := tokensByID(vocab, vocabPath)
	if err != nil {
		return nil, err
	}
	data, err = regularfile.ReadFileMax(mergesPath, regularfile.MaxMergesTxt)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	merges, err := parseMergesTxt(data, mergesPath)
	if err != nil {
		return nil, err
	}
	spec := vocabSpec{source: vocabPath, tokens: tokens, merges: merges, eot: -1}
	// vocab.json does not say which tokens are special; GPT-2 has one.
	if id, ok := vocab[EndOfText]; ok {
		spec.special = map[string]int{EndOfText: id}
	}
	return build(spec)
}

// maxVocab bounds ids so a corrupt file cannot demand a huge table.
const maxVocab = 1 << 21

// tokensByID inverts a token -> id map into a slice indexed by id.
func tokensByID(vocab map[string]int, source string) ([]string, error) {
	size := 0
	for tok, id := range vocab {
		if id < 0 || id >= maxVocab {
			return nil, fmt.Errorf("%w: %s: token %q has id %d outside [0, %d)", ErrFormat, source, tok, id, maxVocab)
		}
		size = max(size, id+1)
	}
	tokens := make([]string, size)
	for tok, id := range vocab {
		if tokens[id] != "" {
			return nil, fmt.Errorf("%w: %s: id %d used by %q and %q", ErrFormat, source, id, tokens[id], tok)
		}
		tokens[id] = tok
	}
	return tokens, nil
}

func parseMergesTxt(data []byte, source string) ([][2]string, error) {
	var merges [][2]string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimRight(sc.Text(), "\r")
		if line == 1 && strings.HasPrefix(text, "#version") || text == "" {
			continue
		}
		m, err := parseMerge(text)
		if err != nil {
			return nil, fmt.Errorf("%w: %s:%d: %v", ErrFormat, source, line, err)
		}
		merges = append(merges, m)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrFormat, source, err)
	}
	return merges, nil
}

// parseMerge splits "left right". Byte-level tokens never contain a space.
func parseMerge(s string) ([2]string, error) {
	a, b, ok := strings.Cut(s, " ")
	if !ok || a == "" || b == "" || strings.Contains(b, " ") {
		return [2]string{}, fmt.Errorf("merge %q is not two tokens separated by one space", s)
	}
	return [2]string{a, b}, nil
}
