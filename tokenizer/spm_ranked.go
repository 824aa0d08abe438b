package tokenizer

import "unicode/utf8"

// Hugging Face's BPE with byte_fallback (tokenizers' BPE::merge_word), for
// SentencePiece vocabularies saved as tokenizer.json: each character is its
// token if it has one, else its UTF-8 bytes as <0xXX> tokens (else the
// unknown token, a run of them fused into one with fuse_unk); then the
// listed merges apply, the lowest rank first. A byte that is not UTF-8 is a
// character of its own here (Hugging Face only ever sees valid text).

func (m *spm) appendRanked(out []int, text string) []int {
	ids := make([]int32, 0, len(text))
	inUnk := false
	for i := 0; i < len(text); {
		_, n := utf8.DecodeRuneInString(text[i:])
		ch := text[i : i+n]
		i += n
		if id, ok := m.vocab[ch]; ok {
			ids = append(ids, id)
			inUnk = false
			continue
		}
		if m.hasBytes(ch) {
			for k := 0; k < len(ch); k++ {
				ids = append(ids, m.byteTok[ch[k]])
			}
			inUnk = false
			continue
		}
		if !(m.fuseUnk && inUnk) {
			ids = append(ids, m.unk)
		}
		inUnk = true
	}
	var merged []int32
	merged = mergeIDs(merged, ids, m.merges)
	for _, id := range merged {
		out = append(out, int(id))
	}
	return out
}

// hasBytes reports whether every byte of s has its fallback token.
func (m *spm) hasBytes(s string) bool {
	for i := 0; i < len(s); i++ {
		if m.byteTok[s[i]] < 0 {
			return false
		}
	}
	return true
}
