package tokenizer

import (
	"errors"
	"fmt"

	"github.com/llorch/llorch-check/gguf"
)

// GGUF token types (llama.cpp's llama_token_type) beyond those of
// load_gguf.go.
const (
	ggufTokenUnknown = 2
	ggufTokenUnused  = 5
	ggufTokenByte    = 6
)

// preTokenizer is a byte-level BPE model's splitting, by the name llama.cpp
// gives it in tokenizer.ggml.pre.
type preTokenizer struct {
	split        func(string, func(string)) // nil: GPT-2's
	ignoreMerges bool                       // a piece that is a token is that token, unmerged
	addBOS       bool                       // llama.cpp's add_bos default for the type
}

// apply sets t's splitting.
func (p preTokenizer) apply(t *Tokenizer) {
	t.split = p.split
	if p.ignoreMerges {
		t.wholeToken = wholeTokens(t)
	}
}

// ggufPre reads tokenizer.ggml.pre; without it GPT-2's, as before the key
// existed. llama.cpp's other names for the same splitting are accepted.
func ggufPre(f *gguf.File) (preTokenizer, error) {
	pre, err := f.String("tokenizer.ggml.pre")
	if errors.Is(err, gguf.ErrNoKey) {
		return preTokenizer{}, nil
	}
	if err != nil {
		return preTokenizer{}, fmt.Errorf("%w: gguf metadata: %v", ErrFormat, err)
	}
	switch pre {
	case "gpt-2":
		return preTokenizer{}, nil
	case "llama-bpe", "llama3", "llama-v3":
		return preTokenizer{split: llama3Pieces, ignoreMerges: true, addBOS: true}, nil
	case "qwen2":
		return preTokenizer{split: qwen2Pieces}, nil
	}
	return preTokenizer{}, fmt.Errorf("%w: gguf metadata: tokenizer.ggml.pre %q is not supported: want gpt-2, llama-bpe, qwen2", ErrFormat, pre)
}

// wholeTokens maps the bytes of every ordinary token to its id, for
// ignore_merges (Llama 3): Hugging Face and llama.cpp both look a piece up
// whole before merging it, and the merges do not always rebuild it.
func wholeTokens(t *Tokenizer) map[string]int32 {
	special := make(map[int32]bool, len(t.special))
	for _, sp := range t.special {
		special[sp.id] = true
	}
	m := make(map[string]int32, len(t.tokens))
	for id, b := range t.tokens {
		if b != nil && !special[int32(id)] {
			m[string(b)] = int32(id)
		}
	}
	return m
}

// ggufBOS reads tokenizer.ggml.bos_token_id and tokenizer.ggml.add_bos_token
// (def when absent, as llama.cpp).
func ggufBOS(f *gguf.File, t *Tokenizer, def bool) error {
	const src = "gguf metadata"
	t.bos, t.addBOS = -1, def
	if id, err := f.Int("tokenizer.ggml.bos_token_id"); err == nil {
		if id < 0 || id >= int64(len(t.tokens)) {
			return fmt.Errorf("%w: %s: tokenizer.ggml.bos_token_id %d outside the vocabulary", ErrFormat, src, id)
		}
		t.bos = int(id)
	} else if !errors.Is(err, gguf.ErrNoKey) {
		return fmt.Errorf("%w: %s: %v", ErrFormat, src, err)
	}
	add, err := ggufBool(f, "tokenizer.ggml.add_bos_token", def)
	t.addBOS = add
	return err
}

// ggufBool reads a bool key, def when absent.
func ggufBool(f *gguf.File, key string, def bool) (bool, error) {
	v, ok := f.Get(key)
	if !ok {
		return def, nil
	}
	b, ok := v.V.(bool)
	if !ok {
		return def, fmt.Errorf("%w: gguf metadata: %s: want bool, have %s", ErrFormat, key, v.Type)
	}
	return b, nil
}

// fromGGUFLlama loads tokenizer.ggml.model "llama": SentencePiece-style BPE
// merged by tokenizer.ggml.scores, token kinds from
// tokenizer.ggml.token_type, the dummy prefix unless
// tokenizer.ggml.add_space_prefix is false.
func fromGGUFLlama(f *gguf.File) (*Tokenizer, error) {
	const src = "gguf metadata"
	wrap := func(err error) error { return fmt.Errorf("%w: %s: %v", ErrFormat, src, err) }
	tokens, err := f.Strings("tokenizer.ggml.tokens")
	if err != nil {
		return nil, wrap(err)
	}
	arr, err := f.Array("tokenizer.ggml.scores")
	if err != nil {
		return nil, wrap(err)
	}
	scores, ok := arr.Values.([]float32)
	if !ok || len(scores) != len(tokens) {
		return nil, fmt.Errorf("%w: %s: tokenizer.ggml.scores: want %d float32, have %d %s", ErrFormat, src, len(tokens), arr.Len(), arr.Elem)
	}
	spec := spmSpec{source: src, tokens: tokens, scores: scores, kinds: make([]tokenKind, len(tokens)), unk: -1, eot: -1, userVerbatim: true}
	if types, err := f.Ints("tokenizer.ggml.token_type"); err == nil {
		if len(types) != len(tokens) {
			return nil, fmt.Errorf("%w: %s: tokenizer.ggml.token_type: %d types for %d tokens", ErrFormat, src, len(types), len(tokens))
		}
		for id, typ := range types {
			switch typ {
			case ggufTokenControl, ggufTokenUnknown:
				spec.kinds[id] = kindSpecial
			case ggufTokenUserDefined:
				// llama.cpp matches these in any text (parse_special or not).
				spec.kinds[id] = kindUser
			case ggufTokenByte:
				spec.kinds[id] = kindByte
			case ggufTokenUnused:
				spec.kinds[id] = kindUnused
			}
		}
	} else if !errors.Is(err, gguf.ErrNoKey) {
		return nil, wrap(err)
	}
	ids := map[string]*int{
		"tokenizer.ggml.unknown_token_id": &spec.unk,
		"tokenizer.ggml.eot_token_id":     &spec.eot,
	}
	for key, dst := range ids {
		if id, err := f.Int(key); err == nil {
			if id < 0 || id >= int64(len(tokens)) {
				return nil, fmt.Errorf("%w: %s: %s %d outside the vocabulary", ErrFormat, src, key, id)
			}
			*dst = int(id)
		}
	}
	if spec.eot < 0 {
		if id, err := f.Int("tokenizer.ggml.eos_token_id"); err == nil && id >= 0 && id < int64(len(tokens)) {
			spec.eot = int(id)
		}
	}
	prefix, err := ggufBool(f, "tokenizer.ggml.add_space_prefix", true)
	if err != nil {
		return nil, err
	}
	if prefix {
		// llama.cpp prefixes every fragment that follows a special token
		// or starts the text, i.e. every fragment.
		spec.prefix = prefixAlways
	}
	t, err := buildSPM(spec)
	if err != nil {
		return nil, err
	}
	if err := ggufBOS(f, t, true); err != nil {
		return nil, err
	}
	return t, nil
}
