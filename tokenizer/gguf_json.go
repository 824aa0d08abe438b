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

// The scores of tokens that no merge makes, and of padding, in a "llama"
// vocabulary written from tokenizer.json: below every merge's, so that
// llama.cpp's score-ordered merging never prefers them.
const (
	jsonScoreNoMerge = -1e9
	jsonScorePadding = -1e9
)

// JSONGGUFKeys converts the HF tokenizer in dir (tokenizer.json, with
// tokenizer_config.json and config.json for the special tokens and the
// chat template) into the tokenizer.* keys of a GGUF file, as llama.cpp's
// convert_hf_to_gguf.py writes them, for a model whose embedding has
// vocabSize rows:
//
//   - byte-level BPE (Llama 3, Qwen2/2.5/3, GPT-2's scheme): model "gpt2",
//     pre "llama-bpe", "qwen2" or "gpt-2" (by the Split regex, which is
//     what llama.cpp's hash of a test encoding tells apart), the tokens,
//     their types (added tokens CONTROL when special, else USER_DEFINED)
//     and the merges;
//   - SentencePiece BPE with byte fallback (Llama 2, Mistral, TinyLlama,
//     Phi-3): model "llama", pre "default", tokens, scores and types
//     (<0xXX> BYTE, the unknown token UNKNOWN, added tokens CONTROL when
//     special, else USER_DEFINED). tokenizer.json has no scores; llama.cpp
//     merges by score, Hugging Face by the merges' rank, so each token a
//     merge makes scores minus the rank of the first merge that makes it
//     (llama.cpp's converter writes -1000 for every token, which merges in
//     the wrong order).
//
// Ids from the tokenizer's size up to vocabSize are "[PAD{id}]" tokens of
// type UNUSED, as llama.cpp's converter pads Qwen2.5's and Phi-3's
// embeddings. Then, as gguf-py's SpecialVocab: the bos, eos, unk, sep,
// pad, cls and mask ids (tokenizer_config.json's tokens, else
// config.json's ids), add_bos_token and add_eos_token (the
// post-processor's template, overridden by tokenizer_config.json), and
// tokenizer.chat_template. Only what this package can tokenize is
// converted (LoadTokenizerJSON's checks), so the written vocabulary loads
// back (FromGGUF) to the same tokenizer.
func JSONGGUFKeys(dir string, vocabSize int) ([]gguf.KV, error) {
	path := filepath.Join(dir, "tokenizer.json")
	data, err := regularfile.ReadFileMax(path, regularfile.MaxTokenizerJSON)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	var tj tokenizerJSON
	if err := json.Unmarshal(data, &tj); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrFormat, path, err)
	}
	if _, err := fromTokenizerJSON(&tj, path); err != nil {
		return nil, err
	}
	cfg, err := readTokenizerConfig(dir)
	if err != nil {
		return nil, err
	}
	v, err := jsonVocab(&tj, path, vocabSize)
	if err != nil {
		return nil, err
	}
	kv := []gguf.KV{gguf.StringKV("tokenizer.ggml.model", v.model), gguf.StringKV("tokenizer.ggml.pre", v.pre),
		gguf.ArrayKV("tokenizer.ggml.tokens", gguf.TypeString, v.tokens)}
	if v.scores != nil {
		kv = append(kv, gguf.ArrayKV("tokenizer.ggml.scores", gguf.TypeFloat32, v.scores))
	}
	kv = append(kv, gguf.ArrayKV("tokenizer.ggml.token_type", gguf.TypeInt32, v.types))
	if v.merges != nil {
		kv = append(kv, gguf.ArrayKV("tokenizer.ggml.merges", gguf.TypeString, v.merges))
	}
	if v.model == "llama" && v.prefix == prefixNever {
		kv = append(kv, gguf.KV{Key: "tokenizer.ggml.add_space_prefix", Value: gguf.Value{Type: gguf.TypeBool, V: false}})
	}
	sv, err := specialVocab(dir, &tj, cfg, len(v.tokens), v.model == "llama")
	if err != nil {
		return nil, err
	}
	return append(kv, sv...), nil
}

// jsonVocabulary is a tokenizer.json's vocabulary as GGUF keys hold it.
type jsonVocabulary struct {
	model, pre string
	tokens     []string
	types      []int32
	scores     []float32 // "llama" only
	merges     []string  // "gpt2" only
	prefix     prefixMode
}

func jsonVocab(tj *tokenizerJSON, path string, vocabSize int) (*jsonVocabulary, error) {
	base, err := tokensByID(tj.Model.Vocab, path)
	if err != nil {
		return nil, err
	}
	v := &jsonVocabulary{model: "gpt2", pre: "gpt-2"}
	if tj.Model.ByteFallback {
		v.model, v.pre = "llama", "default"
		prefix, ferr := spmPrefix(tj)
		if ferr != nil {
			return nil, fmt.Errorf("%w: %s: %s: %s", ErrFormat, path, ferr.field, ferr.msg)
		}
		v.prefix = prefix
	} else if p := tj.PreTokenizer; p != nil && p.Type == "Sequence" && len(p.Pretokenizers) > 0 && p.Pretokenizers[0].Pattern.Regex != nil {
		switch *p.Pretokenizers[0].Pattern.Regex {
		case llama3Pattern:
			v.pre = "llama-bpe"
		case qwen2Pattern:
			v.pre = "qwen2"
		}
	}
	size := len(base)
	added := tj.AddedTokens
	if v.model == "llama" {
		// llama.cpp's converter drops, with a warning, the added tokens
		// past the model's rows: Gemma 3 1B's 262144 leave out
		// <image_soft_token> (262144), which only its vision models use.
		added = slices.DeleteFunc(slices.Clone(added), func(at addedToken) bool { return at.ID >= vocabSize && at.ID >= len(base) })
	}
	for _, at := range added {
		size = max(size, at.ID+1)
	}
	if size > vocabSize {
		return nil, fmt.Errorf("%s: %d tokens (ids up to %d), the model's vocabulary is %d", path, size, size-1, vocabSize)
	}
	v.tokens = make([]string, vocabSize)
	v.types = make([]int32, vocabSize)
	copy(v.tokens, base)
	present := make([]bool, vocabSize)
	for id, tok := range base {
		if tok == "" {
			continue
		}
		present[id] = true
		v.types[id] = ggufTokenNormal
		if _, ok := parseByteToken(tok); ok && v.model == "llama" {
			v.types[id] = ggufTokenByte
		}
	}
	if u := tj.Model.UnkToken; u != nil && v.model == "llama" {
		if id, ok := tj.Model.Vocab[*u]; ok {
			v.types[id] = ggufTokenUnknown
		}
	}
	for _, at := range added {
		if at.ID < 0 {
			return nil, fmt.Errorf("%w: %s: added token %q has id %d", ErrFormat, path, at.Content, at.ID)
		}
		tok, typ := at.Content, int32(ggufTokenUserDefined)
		switch {
		case v.types[at.ID] == ggufTokenUnknown:
			typ = ggufTokenUnknown
		case at.Special || looksSpecial(tok):
			typ = ggufTokenControl
		default:
			// llama.cpp matches user-defined tokens in the text as it
			// is, before any "▁" replaces its spaces.
			tok = strings.ReplaceAll(tok, spaceMarker, " ")
		}
		v.tokens[at.ID], v.types[at.ID], present[at.ID] = tok, typ, true
	}
	for id := range v.tokens {
		if !present[id] {
			v.tokens[id], v.types[id] = fmt.Sprintf("[PAD%d]", id), ggufTokenUnused
		}
	}
	merges, err := parseJSONMerges(tj.Model.Merges)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: model.merges: %v", ErrFormat, path, err)
	}
	if v.model == "gpt2" {
		v.merges = make([]string, len(merges))
		for i, m := range merges {
			// gguf-py's encoding of a space inside a part (possible only
			// in the pair layout): U+0120, as byte-level BPE spells it.
			v.merges[i] = strings.ReplaceAll(m[0], " ", "\u0120") + " " + strings.ReplaceAll(m[1], " ", "\u0120")
		}
		return v, nil
	}
	v.scores = make([]float32, vocabSize)
	for id := range v.scores {
		v.scores[id] = jsonScoreNoMerge
		if !present[id] {
			v.scores[id] = jsonScorePadding
		}
	}
	made := make([]bool, vocabSize)
	for rank, m := range merges {
		id, ok := tj.Model.Vocab[m[0]+m[1]]
		if ok && !made[id] {
			made[id] = true
			v.scores[id] = -float32(rank)
		}
	}
	return v, nil
}

// looksSpecial is llama.cpp's converter's guess that an added token not
// marked special is a control token all the same.
func looksSpecial(tok string) bool {
	switch tok {
	case "<pad>", "<mask>", "<2mass>", "[@BOS@]":
		return true
	}
	return strings.HasPrefix(tok, "<|") && strings.HasSuffix(tok, "|>") ||
		strings.HasPrefix(tok, "<｜") && strings.HasSuffix(tok, "｜>") ||
		strings.HasPrefix(tok, "<unused") && strings.HasSuffix(tok, ">")
}

// readTokenizerConfig reads dir's tokenizer_config.json; nil without one.
func readTokenizerConfig(dir string) (map[string]json.RawMessage, error) {
	return readJSONObject(filepath.Join(dir, "tokenizer_config.json"), regularfile.MaxTokenizerConfig)
}

// readJSONObject reads an optional JSON object file of at most max bytes
// beside a model's weights; nil without the file.
func readJSONObject(path string, max int64) (map[string]json.RawMessage, error) {
	data, err := regularfile.ReadFileMax(path, max)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrFormat, path, err)
	}
	return obj, nil
}
