package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/llorch/llorch-check/internal/regularfile"
)

// LoadTokenizerJSON loads a Hugging Face fast-tokenizer file whose model
// is BPE: GPT-2's scheme (the ByteLevel pre-tokenizer), Llama 3's and
// Qwen2's (a Split regex, then ByteLevel; load_tokenizer_json_llama.go), or
// SentencePiece's (byte_fallback). Configurations that would tokenize
// differently (another normalizer, add_prefix_space, another regex) are
// rejected rather than silently ignored. Its added tokens are special
// tokens, matched by EncodeSpecial only.
func LoadTokenizerJSON(path string) (*Tokenizer, error) {
	data, err := regularfile.ReadFileMax(path, regularfile.MaxTokenizerJSON)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	return parseTokenizerJSON(data, path)
}

// tokenizerJSON is the part of tokenizer.json the loaders read.
type tokenizerJSON struct {
	AddedTokens   []addedToken    `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  *preTokJSON     `json:"pre_tokenizer"`
	Decoder       json.RawMessage `json:"decoder"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Model         struct {
		Type         string          `json:"type"`
		Vocab        map[string]int  `json:"vocab"`
		Merges       json.RawMessage `json:"merges"`
		ByteFallback bool            `json:"byte_fallback"`
		IgnoreMerges bool            `json:"ignore_merges"`
		FuseUnk      bool            `json:"fuse_unk"`
		UnkToken     *string         `json:"unk_token"`
		Dropout      *float64        `json:"dropout"`
	} `json:"model"`
}

// addedToken is one of tokenizer.json's added_tokens.
type addedToken struct {
	ID      int    `json:"id"`
	Content string `json:"content"`
	Special bool   `json:"special"`
}

// preTokJSON is one pre-tokenizer; Sequence holds others.
type preTokJSON struct {
	Type           string `json:"type"`
	AddPrefixSpace bool   `json:"add_prefix_space"`
	UseRegex       *bool  `json:"use_regex"`
	// Split
	Pattern struct {
		Regex  *string `json:"Regex"`
		String *string `json:"String"`
	} `json:"pattern"`
	Behavior string `json:"behavior"`
	Invert   bool   `json:"invert"`
	// Metaspace
	Replacement   string `json:"replacement"`
	PrependScheme string `json:"prepend_scheme"`
	Split         *bool  `json:"split"`
	// Sequence
	Pretokenizers []preTokJSON `json:"pretokenizers"`
}

// parseTokenizerJSON is LoadTokenizerJSON of the file's bytes; path names
// it in errors.
func parseTokenizerJSON(data []byte, path string) (*Tokenizer, error) {
	var tj tokenizerJSON
	if err := json.Unmarshal(data, &tj); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrFormat, path, err)
	}
	return fromTokenizerJSON(&tj, path)
}

// fromTokenizerJSON is parseTokenizerJSON of the decoded file.
func fromTokenizerJSON(tj *tokenizerJSON, path string) (*Tokenizer, error) {
	unsupported := func(what string) error {
		return fmt.Errorf("%w: %s: unsupported %s (implemented: GPT-2 byte-level BPE, Llama 3 and Qwen2 split BPE, byte_fallback BPE)", ErrFormat, path, what)
	}
	switch {
	case tj.Model.Type != "" && tj.Model.Type != "BPE":
		return nil, unsupported("model type " + tj.Model.Type)
	case tj.Model.ByteFallback:
		return spmFromTokenizerJSON(tj, path)
	case tj.PreTokenizer != nil && tj.PreTokenizer.Type == "Sequence":
		return splitFromTokenizerJSON(tj, path)
	case len(tj.Normalizer) > 0 && string(tj.Normalizer) != "null":
		return nil, unsupported("normalizer " + string(tj.Normalizer))
	case tj.PreTokenizer == nil || tj.PreTokenizer.Type != "ByteLevel":
		return nil, unsupported("pre_tokenizer (want ByteLevel)")
	case tj.PreTokenizer.AddPrefixSpace:
		return nil, unsupported("pre_tokenizer add_prefix_space=true")
	case tj.PreTokenizer.UseRegex != nil && !*tj.PreTokenizer.UseRegex:
		return nil, unsupported("pre_tokenizer use_regex=false")
	}
	return byteLevelFromTokenizerJSON(tj, path)
}

// byteLevelFromTokenizerJSON builds GPT-2's byte-level BPE from the model's
// vocabulary and merges, and the added tokens as special tokens.
func byteLevelFromTokenizerJSON(tj *tokenizerJSON, path string) (*Tokenizer, error) {
	tokens, err := tokensByID(tj.Model.Vocab, path)
	if err != nil {
		return nil, err
	}
	merges, err := parseJSONMerges(tj.Model.Merges)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: model.merges: %v", ErrFormat, path, err)
	}
	spec := vocabSpec{source: path, tokens: tokens, merges: merges, eot: -1, special: map[string]int{}}
	for _, at := range tj.AddedTokens {
		if at.ID >= len(spec.tokens) {
			if at.ID >= maxVocab {
				return nil, fmt.Errorf("%w: %s: added token %q has id %d", ErrFormat, path, at.Content, at.ID)
			}
			spec.tokens = append(spec.tokens, make([]string, at.ID+1-len(spec.tokens))...)
		}
		if at.ID >= 0 && spec.tokens[at.ID] == "" {
			spec.tokens[at.ID] = at.Content
		}
		spec.special[at.Content] = at.ID
	}
	return build(spec)
}

// parseJSONMerges accepts both layouts Hugging Face has written: "a b"
// strings, and (since tokenizers 0.20) ["a", "b"] pairs.
func parseJSONMerges(raw json.RawMessage) ([][2]string, error) {
	var strs []string
	if err := json.Unmarshal(raw, &strs); err == nil {
		out := make([][2]string, len(strs))
		for i, s := range strs {
			if out[i], err = parseMerge(s); err != nil {
				return nil, fmt.Errorf("entry %d: %v", i, err)
			}
		}
		return out, nil
	}
	var pairs [][2]string
	if err := json.Unmarshal(raw, &pairs); err != nil {
		return nil, errors.New("neither a list of \"a b\" strings nor of [a, b] pairs")
	}
	return pairs, nil
}
