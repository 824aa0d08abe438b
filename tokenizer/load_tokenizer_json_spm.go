package tokenizer

import (
	"encoding/json"
	"fmt"
)

// spmFromTokenizerJSON loads a SentencePiece vocabulary converted to
// tokenizer.json (Llama 2, Mistral, TinyLlama, Phi-3): a BPE model with
// byte_fallback, merged by rank (spm_ranked.go). The "▁" handling is either
// the normalizer Sequence [Prepend "▁", Replace " " → "▁"] with no
// pre-tokenizer (the older conversion), or no normalizer and the Metaspace
// pre-tokenizer without split (the newer one); the decoder is taken to
// undo it (Replace, ByteFallback, Fuse, Strip one leading space).
func spmFromTokenizerJSON(tj *tokenizerJSON, path string) (*Tokenizer, error) {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s: %s", ErrFormat, path, field, fmt.Sprintf(format, args...))
	}
	if tj.Model.Dropout != nil && *tj.Model.Dropout != 0 {
		return nil, bad("model.dropout", "%v is not supported: want null", *tj.Model.Dropout)
	}
	prefix, err := spmPrefix(tj)
	if err != nil {
		return nil, bad(err.field, "%s", err.msg)
	}
	tokens, err2 := tokensByID(tj.Model.Vocab, path)
	if err2 != nil {
		return nil, err2
	}
	merges, err2 := parseJSONMerges(tj.Model.Merges)
	if err2 != nil {
		return nil, bad("model.merges", "%v", err2)
	}
	spec := spmSpec{source: path, merges: merges, unk: -1, eot: -1, prefix: prefix, fuseUnk: tj.Model.FuseUnk}
	for id, tok := range tokens {
		if _, ok := parseByteToken(tok); ok && len(spec.kinds) <= id {
			spec.kinds = append(spec.kinds, make([]tokenKind, id+1-len(spec.kinds))...)
			spec.kinds[id] = kindByte
		}
	}
	for _, at := range tj.AddedTokens {
		if at.ID < 0 || at.ID >= maxVocab {
			return nil, bad("added_tokens", "token %q has id %d", at.Content, at.ID)
		}
		if at.ID >= len(tokens) {
			tokens = append(tokens, make([]string, at.ID+1-len(tokens))...)
		}
		if tokens[at.ID] != "" && tokens[at.ID] != at.Content {
			return nil, bad("added_tokens", "token %q has id %d, which the vocabulary gives %q", at.Content, at.ID, tokens[at.ID])
		}
		tokens[at.ID] = at.Content
	}
	if u := tj.Model.UnkToken; u != nil {
		id, ok := tj.Model.Vocab[*u]
		if !ok {
			return nil, bad("model.unk_token", "%q is not in the vocabulary", *u)
		}
		spec.unk = id
	}
	spec.tokens = tokens
	spec.kinds = append(spec.kinds, make([]tokenKind, len(tokens)-len(spec.kinds))...)
	for _, at := range tj.AddedTokens {
		// Hugging Face matches every added token in the text; a non-special
		// one is text (its decoder's Replace applies), a special one is
		// left to EncodeSpecial (see llama.go).
		spec.kinds[at.ID] = kindSpecial
		if !at.Special && spec.unk != at.ID {
			spec.kinds[at.ID] = kindUser
		}
	}
	t, err2 := buildSPM(spec)
	if err2 != nil {
		return nil, err2
	}
	t.bos, t.addBOS = templateBOS(tj)
	return t, nil
}

type fieldError struct{ field, msg string }

// spmPrefix reads where the dummy prefix comes from: the normalizer's
// Prepend, or the Metaspace pre-tokenizer's prepend_scheme.
func spmPrefix(tj *tokenizerJSON) (prefixMode, *fieldError) {
	type normJSON struct {
		Type    string
		Prepend string
		Pattern struct{ String *string }
		Content string
	}
	var n struct {
		normJSON
		Normalizers []normJSON
	}
	if len(tj.Normalizer) > 0 && string(tj.Normalizer) != "null" {
		if err := json.Unmarshal(tj.Normalizer, &n); err != nil {
			return 0, &fieldError{"normalizer", err.Error()}
		}
	}
	steps := n.Normalizers
	if n.Type != "Sequence" && n.Type != "" {
		steps = []normJSON{n.normJSON}
	}
	prefix := prefixNever
	replaced := false
	for i, s := range steps {
		switch {
		case s.Type == "Prepend" && s.Prepend == spaceMarker && i == 0:
			prefix = prefixAlways
		case s.Type == "Replace" && s.Pattern.String != nil && *s.Pattern.String == " " && s.Content == spaceMarker:
			replaced = true
		default:
			return 0, &fieldError{"normalizer", fmt.Sprintf("%s is not supported: want [Prepend \"▁\", Replace \" \" → \"▁\"]", tj.Normalizer)}
		}
	}
	if replaced {
		if p := tj.PreTokenizer; p != nil && !splitsOnSpace(p) {
			return 0, &fieldError{"pre_tokenizer", "want null, or Split on \" \" (Gemma's), with the Replace normalizer"}
		}
		return prefix, nil
	}
	p := tj.PreTokenizer
	if len(steps) > 0 || p == nil || p.Type != "Metaspace" || p.Replacement != spaceMarker || p.Split == nil || *p.Split {
		return 0, &fieldError{"pre_tokenizer", "want the normalizer Replace \" \" → \"▁\", or Metaspace with replacement \"▁\" and split false"}
	}
	switch p.PrependScheme {
	case "always":
		return prefixAlways, nil
	case "first":
		return prefixFirst, nil
	case "never":
		return prefixNever, nil
	}
	return 0, &fieldError{"pre_tokenizer.prepend_scheme", fmt.Sprintf("%q is not supported: want always, first, never", p.PrependScheme)}
}

// splitsOnSpace reports whether p is Gemma's pre-tokenizer, a Split on the
// string " " merged with the previous piece: after the normalizer has
// replaced every space with "▁" it finds nothing to split, so the text is
// merged whole as without a pre-tokenizer. Only "MergedWithPrevious" is
// accepted, the one behaviour checked against Hugging Face's ids.
func splitsOnSpace(p *preTokJSON) bool {
	return p.Type == "Split" && p.Pattern.String != nil && *p.Pattern.String == " " && p.Pattern.Regex == nil &&
		p.Behavior == "MergedWithPrevious" && !p.Invert
}
