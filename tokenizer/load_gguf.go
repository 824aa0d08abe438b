package tokenizer

import (
	"errors"
	"fmt"

	"github.com/llorch/llorch-check/gguf"
)

// GGUF token types (llama.cpp's llama_token_type) that are matched and
// decoded as whole strings rather than as byte-level text.
const (
	ggufTokenControl     = 3
	ggufTokenUserDefined = 4
)

// FromGGUF loads the tokenizer from GGUF metadata. tokenizer.ggml.model
// "gpt2" is byte-level BPE: tokenizer.ggml.tokens and tokenizer.ggml.merges,
// with control and user-defined tokens from tokenizer.ggml.token_type as
// special tokens, split as tokenizer.ggml.pre says (gpt-2, llama-bpe,
// qwen2). "llama" is SentencePiece-style BPE (load_gguf_llama.go).
func FromGGUF(f *gguf.File) (*Tokenizer, error) {
	const src = "gguf metadata"
	wrap := func(err error) error { return fmt.Errorf("%w: %s: %v", ErrFormat, src, err) }
	model, err := f.String("tokenizer.ggml.model")
	if err != nil {
		return nil, wrap(err)
	}
	switch model {
	case "gpt2":
	case "llama":
		return fromGGUFLlama(f)
	default:
		return nil, fmt.Errorf("%w: %s: tokenizer.ggml.model %q is not supported: want gpt2, llama", ErrFormat, src, model)
	}
	pre, err := ggufPre(f)
	if err != nil {
		return nil, err
	}
	tokens, err := f.Strings("tokenizer.ggml.tokens")
	if err != nil {
		return nil, wrap(err)
	}
	mergeStrs, err := f.Strings("tokenizer.ggml.merges")
	if err != nil {
		return nil, wrap(err)
	}
	merges := make([][2]string, len(mergeStrs))
	for i, s := range mergeStrs {
		if merges[i], err = parseMerge(s); err != nil {
			return nil, fmt.Errorf("%w: %s: tokenizer.ggml.merges[%d]: %v", ErrFormat, src, i, err)
		}
	}
	spec := vocabSpec{source: src, tokens: tokens, merges: merges, eot: -1, special: map[string]int{}}
	if types, err := f.Ints("tokenizer.ggml.token_type"); err == nil {
		if len(types) != len(tokens) {
			return nil, fmt.Errorf("%w: %s: %d token types for %d tokens", ErrFormat, src, len(types), len(tokens))
		}
		for id, typ := range types {
			if typ == ggufTokenControl || typ == ggufTokenUserDefined {
				spec.special[tokens[id]] = id
			}
		}
	} else if !errors.Is(err, gguf.ErrNoKey) {
		return nil, wrap(err)
	}
	for _, key := range []string{"tokenizer.ggml.eot_token_id", "tokenizer.ggml.eos_token_id"} {
		if id, err := f.Int(key); err == nil {
			if id < 0 || id >= int64(len(tokens)) {
				return nil, fmt.Errorf("%w: %s: %s %d outside the vocabulary", ErrFormat, src, key, id)
			}
			spec.eot = int(id)
			break
		}
	}
	t, err := build(spec)
	if err != nil {
		return nil, err
	}
	pre.apply(t)
	if err := ggufBOS(f, t, pre.addBOS); err != nil {
		return nil, err
	}
	return t, nil
}
