package tokenizer

import (
	"fmt"
	"strings"
)

// SentencePiece-style BPE with byte fallback, the tokenizer of Llama 2,
// Mistral, TinyLlama and Phi-3. Unlike GPT-2's byte-level BPE it works on
// characters, not bytes, and has no pre-tokenizer: a space becomes "▁"
// (U+2581), the text gets one "▁" in front (the "dummy prefix", so that a
// word at the start is tokenized as it is after a space), and the whole
// text is merged at once. A character no token covers is spelled as its
// UTF-8 bytes with the tokens <0x00>..<0xFF>.
//
// The merging comes in two flavours that agree on real vocabularies:
// llama.cpp's (GGUF, spm_scored.go) merges any two neighbours whose text is
// a token, the highest-scoring first; Hugging Face's (tokenizer.json,
// spm_ranked.go) merges the pairs its merges list names, the lowest rank
// first.

// spaceMarker is what SentencePiece writes for a space.
const spaceMarker = "\u2581"

// prefixMode says when a fragment of text gets the dummy prefix.
type prefixMode uint8

const (
	prefixNever  prefixMode = iota
	prefixAlways            // every fragment between special tokens (llama.cpp, HF's Prepend normalizer)
	prefixFirst             // the text's first fragment only (HF's Metaspace prepend_scheme "first")
)

// tokenKind says how a token decodes and whether EncodeSpecial matches it.
type tokenKind uint8

const (
	kindNormal  tokenKind = iota // text, "▁" for a space
	kindByte                     // <0xXX>: that one byte
	kindSpecial                  // control, unknown: verbatim, matched by EncodeSpecial
	kindUnused                   // GGUF's unused tokens: decoded as text, never produced
	kindUser                     // user-defined: text, matched whole by Encode and EncodeSpecial
)

// spm is the encoder; the Tokenizer holds the decoding table.
type spm struct {
	vocab   map[string]int32 // token text -> id, every token
	byteTok [256]int32       // the token of <0xXX>, -1 if absent
	unk     int32            // the unknown token, -1 if none
	prefix  prefixMode

	scores []float32 // llama.cpp's merging when not nil
	merges map[uint64]merge
	// fuseUnk makes a run of unknown characters one unknown token (HF's
	// fuse_unk); only vocabularies without byte fallback produce any.
	fuseUnk bool
}

// spmSpec is what the SPM loaders produce.
type spmSpec struct {
	source  string
	tokens  []string    // token text by id, "" for gaps
	kinds   []tokenKind // by id
	scores  []float32   // GGUF: scores by id
	merges  [][2]string // tokenizer.json: merges in rank order
	unk     int         // -1 if none
	prefix  prefixMode
	fuseUnk bool
	eot     int // -1 if none
	// userVerbatim decodes user-defined tokens as written (GGUF: llama.cpp's
	// converter already wrote their "▁" as spaces), not with "▁" as a
	// space (tokenizer.json's decoder applies its Replace to them too).
	userVerbatim bool
}

// buildSPM checks spec and makes the Tokenizer.
func buildSPM(spec spmSpec) (*Tokenizer, error) {
	errf := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrFormat, spec.source, fmt.Sprintf(format, args...))
	}
	if len(spec.tokens) == 0 {
		return nil, errf("empty vocabulary")
	}
	m := &spm{
		vocab:   make(map[string]int32, len(spec.tokens)),
		unk:     int32(spec.unk),
		prefix:  spec.prefix,
		scores:  spec.scores,
		fuseUnk: spec.fuseUnk,
	}
	for i := range m.byteTok {
		m.byteTok[i] = -1
	}
	t := &Tokenizer{
		tokens:     make([][]byte, len(spec.tokens)),
		eot:        spec.eot,
		bos:        -1,
		spm:        m,
		stripSpace: spec.prefix != prefixNever,
		cache:      newCache(),
	}
	for id, tok := range spec.tokens {
		if tok == "" {
			continue
		}
		if spec.kinds[id] == kindUser && spec.prefix != prefixNever {
			// With a dummy prefix, llama.cpp and Hugging Face prefix the
			// text after a matched user-defined token again, so that
			// Decode(Encode(s)) != s: such vocabularies (Phi-3's "</s>")
			// keep them as special tokens, matched by EncodeSpecial only.
			spec.kinds[id] = kindSpecial
		}
		if prev, dup := m.vocab[tok]; dup {
			return nil, errf("token %q has ids %d and %d", tok, prev, id)
		}
		m.vocab[tok] = int32(id)
		switch spec.kinds[id] {
		case kindByte:
			b, ok := parseByteToken(tok)
			if !ok {
				return nil, errf("token %d %q is a byte token but not <0xXX>", id, tok)
			}
			m.byteTok[b] = int32(id)
			t.tokens[id] = []byte{b}
		case kindSpecial:
			t.tokens[id] = []byte(tok)
			t.special = append(t.special, specialToken{text: tok, id: int32(id)})
		case kindUser:
			t.tokens[id] = []byte(tok)
			if !spec.userVerbatim {
				t.tokens[id] = []byte(strings.ReplaceAll(tok, spaceMarker, " "))
			}
			t.special = append(t.special, specialToken{text: tok, id: int32(id), user: true})
		default:
			t.tokens[id] = []byte(strings.ReplaceAll(tok, spaceMarker, " "))
		}
	}
	t.finishSpecial()
	if spec.unk >= len(spec.tokens) {
		return nil, errf("unknown token id %d outside the vocabulary", spec.unk)
	}
	for b, id := range m.byteTok {
		if id < 0 && m.unk < 0 {
			return nil, errf("vocabulary lacks the byte-fallback token <0x%02X> and has no unknown token", b)
		}
	}
	if spec.scores == nil {
		m.merges = make(map[uint64]merge, len(spec.merges))
		for rank, mg := range spec.merges {
			a, okA := m.vocab[mg[0]]
			b, okB := m.vocab[mg[1]]
			res, okRes := m.vocab[mg[0]+mg[1]]
			if !okA || !okB || !okRes {
				return nil, errf("merge %d %q: a token is not in the vocabulary", rank, mg[0]+" "+mg[1])
			}
			if _, dup := m.merges[pairKey(a, b)]; !dup {
				m.merges[pairKey(a, b)] = merge{rank: int32(rank), id: res}
			}
		}
	}
	return t, nil
}

// parseByteToken reads "<0xXX>" (upper- or lower-case hex).
func parseByteToken(tok string) (byte, bool) {
	if len(tok) != 6 || !strings.HasPrefix(tok, "<0x") || tok[5] != '>' {
		return 0, false
	}
	var b byte
	for _, c := range []byte(tok[3:5]) {
		switch {
		case c >= '0' && c <= '9':
			b = b<<4 | (c - '0')
		case c >= 'A' && c <= 'F':
			b = b<<4 | (c - 'A' + 10)
		case c >= 'a' && c <= 'f':
			b = b<<4 | (c - 'a' + 10)
		default:
			return 0, false
		}
	}
	return b, true
}

// appendEncode appends the tokens of one fragment of text (between special
// tokens); atStart says it begins the text.
func (m *spm) appendEncode(out []int, text string, atStart bool) []int {
	if text == "" {
		return out
	}
	var sb strings.Builder
	sb.Grow(len(text) + 3 + 2*strings.Count(text, " "))
	if m.prefix == prefixAlways || m.prefix == prefixFirst && atStart {
		sb.WriteString(spaceMarker)
	}
	for i := 0; i < len(text); {
		j := strings.IndexByte(text[i:], ' ')
		if j < 0 {
			sb.WriteString(text[i:])
			break
		}
		sb.WriteString(text[i : i+j])
		sb.WriteString(spaceMarker)
		i += j + 1
	}
	if m.scores != nil {
		return m.appendScored(out, sb.String())
	}
	return m.appendRanked(out, sb.String())
}

// appendBytes spells s as byte-fallback tokens (the unknown token where a
// byte has none).
func (m *spm) appendBytes(out []int, s string) []int {
	for i := 0; i < len(s); i++ {
		id := m.byteTok[s[i]]
		if id < 0 {
			id = m.unk
		}
		out = append(out, int(id))
	}
	return out
}
