package tokenizer

import (
	"encoding/json"
	"fmt"

	"golang.org/x/text/unicode/norm"
)

// splitFromTokenizerJSON loads byte-level BPE whose pre-tokenizer is a
// Split regex followed by ByteLevel without its own regex: Llama 3's and
// Qwen2's, recognised by their exact patterns (Go's regexp cannot run them:
// pretokenize_llama3.go). Qwen's NFC normalizer is applied; no other.
func splitFromTokenizerJSON(tj *tokenizerJSON, path string) (*Tokenizer, error) {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s: %s", ErrFormat, path, field, fmt.Sprintf(format, args...))
	}
	var normalize func(string) string
	if n := normalizerType(tj.Normalizer); n == "NFC" {
		normalize = norm.NFC.String
	} else if n != "" {
		return nil, bad("normalizer", "%s is not supported: want null or NFC", tj.Normalizer)
	}
	seq := tj.PreTokenizer.Pretokenizers
	if len(seq) != 2 || seq[0].Type != "Split" || seq[1].Type != "ByteLevel" {
		return nil, bad("pre_tokenizer", "a Sequence of %s is not supported: want [Split, ByteLevel]", preTypes(seq))
	}
	sp, bl := seq[0], seq[1]
	var split func(string, func(string))
	switch {
	case sp.Pattern.Regex == nil:
		return nil, bad("pre_tokenizer.pretokenizers[0].pattern", "want a Regex")
	case *sp.Pattern.Regex == llama3Pattern:
		split = llama3Pieces
	case *sp.Pattern.Regex == qwen2Pattern:
		split = qwen2Pieces
	default:
		return nil, bad("pre_tokenizer.pretokenizers[0].pattern.Regex", "%q is not supported: want Llama 3's or Qwen2's pattern", *sp.Pattern.Regex)
	}
	switch {
	case sp.Behavior != "Isolated" || sp.Invert:
		return nil, bad("pre_tokenizer.pretokenizers[0]", "behavior %q, invert %v is not supported: want Isolated, false", sp.Behavior, sp.Invert)
	case bl.AddPrefixSpace || bl.UseRegex == nil || *bl.UseRegex:
		return nil, bad("pre_tokenizer.pretokenizers[1]", "ByteLevel must have add_prefix_space false and use_regex false")
	case tj.Model.Dropout != nil && *tj.Model.Dropout != 0:
		return nil, bad("model.dropout", "%v is not supported: want null", *tj.Model.Dropout)
	}
	t, err := byteLevelFromTokenizerJSON(tj, path)
	if err != nil {
		return nil, err
	}
	t.split, t.normalize = split, normalize
	if tj.Model.IgnoreMerges {
		t.wholeToken = wholeTokens(t)
	}
	t.bos, t.addBOS = templateBOS(tj)
	return t, nil
}

// normalizerType is the normalizer's type, "" for none.
func normalizerType(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var n struct{ Type string }
	if json.Unmarshal(raw, &n) != nil || n.Type == "" {
		return "?"
	}
	return n.Type
}

func preTypes(seq []preTokJSON) []string {
	out := make([]string, len(seq))
	for i, p := range seq {
		out[i] = p.Type
	}
	return out
}

// templateBOS finds the token the TemplateProcessing post-processor (alone
// or in a Sequence) puts before the text ($A), which is how tokenizer.json
// says "add BOS"; -1 and false without one.
func templateBOS(tj *tokenizerJSON) (int, bool) {
	type piece struct {
		SpecialToken *struct{ ID string } `json:"SpecialToken"`
		Sequence     *struct{ ID string } `json:"Sequence"`
	}
	type proc struct {
		Type          string
		Single        []piece
		SpecialTokens map[string]struct{ IDs []int } `json:"special_tokens"`
		Processors    []json.RawMessage
	}
	var find func(raw json.RawMessage) (int, bool)
	find = func(raw json.RawMessage) (int, bool) {
		var p proc
		if len(raw) == 0 || json.Unmarshal(raw, &p) != nil {
			return -1, false
		}
		switch p.Type {
		case "Sequence":
			for _, sub := range p.Processors {
				if id, ok := find(sub); ok {
					return id, ok
				}
			}
		case "TemplateProcessing":
			if len(p.Single) > 1 && p.Single[0].SpecialToken != nil && p.Single[1].Sequence != nil {
				if st, ok := p.SpecialTokens[p.Single[0].SpecialToken.ID]; ok && len(st.IDs) == 1 {
					return st.IDs[0], true
				}
			}
		}
		return -1, false
	}
	return find(tj.PostProcessor)
}
