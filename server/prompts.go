package server

import (
	"encoding/json"
	"fmt"

	"github.com/llorch/llorch-check/generation"
)

// promptsField reads field name (prompt, or input for embeddings): a
// string, a list of strings, a list of token ids or a list of lists of
// ids, each prompt checked; it returns their texts and tokens.
func (s *Server) promptsField(e *engine, f *fields, name string) ([]string, [][]int) {
	if !f.present(name) {
		f.bad(name, "required", "is required", nil)
		return nil, nil
	}
	raw := f.raw[name]
	// Each attempt decodes into a fresh value: a failed Unmarshal leaves
	// partial results behind.
	var many []string
	var idLists [][]int
	var one string
	var strs []string
	var ids []int
	var lists [][]int
	switch {
	case json.Unmarshal(raw, &one) == nil:
		many = []string{one}
	case json.Unmarshal(raw, &strs) == nil:
		many = strs
	case json.Unmarshal(raw, &ids) == nil:
		idLists = [][]int{ids}
	case json.Unmarshal(raw, &lists) == nil:
		idLists = lists
	default:
		f.bad(name, "type", "must be a string, a list of strings, a list of token ids or a list of lists of token ids", nil)
		return nil, nil
	}
	var encoded [][]int
	if len(many)+len(idLists) == 0 || len(many)+len(idLists) > s.cfg.MaxBatch {
		f.bad(name, "length", fmt.Sprintf("must hold 1..%d prompts", s.cfg.MaxBatch), nil)
		return nil, nil
	}
	var texts []string
	for i, p := range many {
		field := fmt.Sprintf("%s[%d]", name, i)
		if len(many) == 1 {
			field = name
		}
		texts = append(texts, p)
		if !f.checkPrompt(field, p) {
			encoded = append(encoded, nil) // refused: not worth tokenizing
			continue
		}
		encoded = append(encoded, e.encode(p))
	}
	V := e.m.Config.VocabSize
	for i, l := range idLists {
		if len(l) == 0 {
			f.bad(fmt.Sprintf("%s[%d]", name, i), "length", "must hold at least one token id", nil)
			continue
		}
		for j, id := range l {
			f.rule(generation.TokenRule(fmt.Sprintf("%s[%d][%d]", name, i, j), id, V))
		}
		text, _ := e.tok.Decode(l)
		texts = append(texts, text)
		encoded = append(encoded, l)
	}
	return texts, encoded
}

// promptIsText reports whether a prompts field holds text (a string or a
// list of strings), which the routes encode after the tokenizer's BOS, or
// token ids, taken as they are.
func promptIsText(raw json.RawMessage) bool {
	var one string
	var strs []string
	return json.Unmarshal(raw, &one) == nil || json.Unmarshal(raw, &strs) == nil
}
