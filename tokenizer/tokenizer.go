// Package tokenizer is GPT-2's byte-level BPE tokenizer, with the exact
// token ids of OpenAI's encoder.py and Hugging Face's GPT2Tokenizer, and
// the Llama family's (llama.go): SentencePiece BPE with byte fallback
// (Llama 2, Mistral, Phi-3, Gemma 3) and Llama 3's and Qwen2's byte-level
// BPE, with the ids of llama.cpp and Hugging Face.
//
// A Tokenizer loads from vocab.json + merges.txt, a Hugging Face
// tokenizer.json, or GGUF metadata (see Load). Encoding accepts any bytes,
// including invalid UTF-8, and never panics; Decode(Encode(s)) == s for
// every valid UTF-8 s, and DecodeBytes(Encode(s)) == s for any s.
//
// Concurrency: a Tokenizer is immutable after loading except for its
// internal, lock-protected cache, so all its methods may be called from any
// number of goroutines at once. A StreamDecoder holds per-stream state and
// is for one goroutine at a time.
package tokenizer

import (
	"errors"
	"fmt"
)

var (
	// ErrNoTokenizer is wrapped by Load when a directory holds no tokenizer.
	ErrNoTokenizer = errors.New("no tokenizer found")
	// ErrInvalidID is wrapped by decoding errors for ids outside the
	// vocabulary.
	ErrInvalidID = errors.New("invalid token id")
	// ErrFormat is wrapped when a tokenizer file is malformed or uses a
	// configuration this package does not implement.
	ErrFormat = errors.New("invalid tokenizer file")
)

// EndOfText is GPT-2's end-of-text token.
const EndOfText = "<|endoftext|>"

// Tokenizer encodes text to token ids and back. See the package comment for
// its concurrency guarantees.
type Tokenizer struct {
	byteID  [256]int32       // token of each single byte
	merges  map[uint64]merge // (left, right) pair -> rank and result
	tokens  [][]byte         // id -> bytes; nil for ids absent from the vocabulary
	special []specialToken   // matched by EncodeSpecial, longest first
	trie    *specialTrie     // finds special's texts (finishSpecial)
	hasUser bool             // special holds user-defined tokens, which Encode matches too
	eot     int
	cache   *cache

	// The Llama family (llama.go); zero for GPT-2, but for bos (-1).
	split      func(string, func(string)) // pre-tokenizer; nil is GPT-2's pieces
	wholeToken map[string]int32           // ignore_merges: a piece that is a token is that token
	normalize  func(string) string        // tokenizer.json's normalizer (Qwen's NFC), or nil
	spm        *spm                       // SentencePiece-style BPE, in place of byte-level BPE
	stripSpace bool                       // decoding drops one leading space (SPM's dummy prefix)
	bos        int                        // beginning-of-sequence token, or -1
	addBOS     bool                       // the model's files ask for BOS first
	padTo      int                        // ids in [len(tokens), padTo) decode to nothing (PadTo)
}

type specialToken struct {
	text string
	id   int32
	// user marks a user-defined token (GGUF's USER_DEFINED, a non-special
	// added token of a SentencePiece tokenizer.json): ordinary text that
	// the model's own tokenizer always cuts out whole, Gemma's "\n",
	// "<b>" and runs of tabs. Encode matches it too.
	user bool
}

// vocabSpec is what every loader produces: token strings by id (byte-level
// text, "" for gaps), merges in rank order, and the special tokens.
type vocabSpec struct {
	source  string // file name, for errors
	tokens  []string
	merges  [][2]string
	special map[string]int // added/control tokens, decoded verbatim
	eot     int            // -1 to look up <|endoftext|>
}

// build checks spec and makes the Tokenizer.
func build(spec vocabSpec) (*Tokenizer, error) {
	errf := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrFormat, spec.source, fmt.Sprintf(format, args...))
	}
	if len(spec.tokens) == 0 {
		return nil, errf("empty vocabulary")
	}
	ids := make(map[string]int32, len(spec.tokens))
	for id, tok := range spec.tokens {
		if tok == "" {
			continue
		}
		if prev, dup := ids[tok]; dup {
			return nil, errf("token %q has ids %d and %d", tok, prev, id)
		}
		ids[tok] = int32(id)
	}
	t := &Tokenizer{
		merges: make(map[uint64]merge, len(spec.merges)),
		tokens: make([][]byte, len(spec.tokens)),
		eot:    spec.eot,
		cache:  newCache(),
		bos:    -1,
	}
	for b := range 256 {
		id, ok := ids[string(byteToRune[b])]
		if !ok {
			return nil, errf("vocabulary lacks the token for byte %#02x (%q)", b, byteToRune[b])
		}
		t.byteID[b] = id
	}
	for rank, m := range spec.merges {
		a, okA := ids[m[0]]
		b, okB := ids[m[1]]
		res, okRes := ids[m[0]+m[1]]
		if !okA || !okB || !okRes {
			return nil, errf("merge %d %q: a token is not in the vocabulary", rank, m[0]+" "+m[1])
		}
		if _, dup := t.merges[pairKey(a, b)]; !dup { // the first rank wins
			t.merges[pairKey(a, b)] = merge{rank: int32(rank), id: res}
		}
	}
	for id, tok := range spec.tokens {
		if tok != "" {
			t.tokens[id] = tokenBytes(tok)
		}
	}
	for text, id := range spec.special {
		if id < 0 || id >= len(spec.tokens) {
			return nil, errf("special token %q has id %d outside the vocabulary", text, id)
		}
		if text == "" {
			continue
		}
		t.tokens[id] = []byte(text)
		t.special = append(t.special, specialToken{text: text, id: int32(id)})
	}
	t.finishSpecial()
	if t.eot < 0 {
		if id, ok := ids[EndOfText]; ok {
			t.eot = int(id)
		}
	}
	return t, nil
}

// finishSpecial orders t.special and builds its matcher; loaders call it
// once the list is complete.
func (t *Tokenizer) finishSpecial() {
	// Longest first, so that a special token that is a prefix of another
	// does not shadow it.
	sortSpecial(t.special)
	t.trie = newSpecialTrie(t.special)
	t.hasUser = false
	for _, sp := range t.special {
		t.hasUser = t.hasUser || sp.user
	}
}

func sortSpecial(s []specialToken) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && (len(s[j].text) > len(s[j-1].text) ||
			len(s[j].text) == len(s[j-1].text) && s[j].text < s[j-1].text); j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// PadTo makes the ids from the tokenizer's size up to n decode to nothing,
// as Hugging Face's decode skips ids its vocabulary lacks: a model's
// embedding often has rows past its tokenizer (Qwen2.5's 151936 over
// 151665, Phi-3's 32064 over 32011), and a model can pick one (random
// weights do, and logit_bias can). Encoding never produces them, and
// VocabSize stays the tokenizer's own.
func (t *Tokenizer) PadTo(n int) { t.padTo = n }

// VocabSize is one more than the largest token id.
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// SpecialIDs are the ids of the special tokens (tokenizer.json's added
// tokens, GGUF's control and user-defined ones, GPT-2's <|endoftext|>),
// whose text stands for something other than itself; not the user-defined
// tokens of a SentencePiece vocabulary (Gemma's "\n", "<b>"), which are
// text.
func (t *Tokenizer) SpecialIDs() []int {
	ids := make([]int, 0, len(t.special))
	for _, sp := range t.special {
		if !sp.user {
			ids = append(ids, int(sp.id))
		}
	}
	return ids
}

// EOT is the id of <|endoftext|> (or the file's end-of-text token), or -1.
func (t *Tokenizer) EOT() int { return t.eot }

// Encode tokenizes text as ordinary text: "<|endoftext|>" in it is just
// characters, as tiktoken's encode_ordinary does. Use it for user input.
// A SentencePiece vocabulary's user-defined tokens (see specialToken) are
// matched, as Hugging Face and llama.cpp match them in any text.
func (t *Tokenizer) Encode(text string) []int {
	out := make([]int, 0, estimateTokens(text))
	if !t.hasUser {
		return t.appendOrdinary(out, text)
	}
	return t.appendMatching(out, text, true)
}

// estimateTokens sizes the output up front, since regrowing a large slice
// costs more than merging: English prose averages over four bytes a token,
// code about three, and few texts go below two.
func estimateTokens(text string) int { return min(len(text)/2, 1<<22) + 8 }

// EncodeSpecial is Encode, except that special tokens written in the text
// become their single ids: "<|endoftext|>" from vocab.json, the added
// tokens of tokenizer.json, control and user-defined tokens of GGUF. Use it
// where the API lets the caller write special tokens.
func (t *Tokenizer) EncodeSpecial(text string) []int {
	return t.appendMatching(make([]int, 0, estimateTokens(text)), text, false)
}

// appendMatching appends the tokens of text, each special token in it (the
// earliest first, the longest of those starting at one place) as its id;
// userOnly matches user-defined tokens alone.
func (t *Tokenizer) appendMatching(out []int, text string, userOnly bool) []int {
	for text != "" && t.trie != nil {
		at, k := t.trie.find(text, t.special, userOnly)
		if at < 0 {
			break
		}
		sp := t.special[k]
		out = t.appendOrdinary(out, text[:at])
		out = append(out, int(sp.id))
		text = text[at+len(sp.text):]
	}
	return t.appendOrdinary(out, text)
}

func (t *Tokenizer) appendOrdinary(out []int, text string) []int {
	if t.spm != nil {
		// SentencePiece sees a fragment whole: it has no pre-tokenizer.
		return t.spm.appendEncode(out, text, len(out) == 0)
	}
	split := pieces
	if t.split != nil {
		split = t.split
		if t.normalize != nil {
			text = t.normalize(text)
		}
	}
	var scratch []int32
	split(text, func(p string) {
		if t.wholeToken != nil {
			if id, ok := t.wholeToken[p]; ok {
				out = append(out, int(id))
				return
			}
		}
		// One and two bytes take at most one lookup: cheaper than the cache.
		if len(p) == 1 {
			out = append(out, int(t.byteID[p[0]]))
			return
		}
		if len(p) == 2 {
			a, b := t.byteID[p[0]], t.byteID[p[1]]
			if m, ok := t.merges[pairKey(a, b)]; ok {
				out = append(out, int(m.id))
			} else {
				out = append(out, int(a), int(b))
			}
			return
		}
		if len(p) > maxCachedPiece {
			scratch = t.bpe(scratch[:0], p)
			out = appendInts(out, scratch)
			return
		}
		if ids, ok := t.cache.get(p); ok {
			out = appendInts(out, ids)
			return
		}
		ids := t.bpe(nil, p)
		t.cache.put(p, ids)
		out = appendInts(out, ids)
	})
	return out
}

func appendInts(out []int, ids []int32) []int {
	for _, id := range ids {
		out = append(out, int(id))
	}
	return out
}
