package tokenizer

import (
	"fmt"
	"unicode/utf8"

	"github.com/llorch/llorch-check/internal/utf8seq"
)

// DecodeBytes returns the exact bytes the ids stand for. Tokens may end in
// the middle of a UTF-8 character, so the result need not be valid UTF-8.
// A SentencePiece vocabulary's dummy prefix (the space its first piece
// carries) is dropped, as Hugging Face's decode does for a whole text.
func (t *Tokenizer) DecodeBytes(ids []int) ([]byte, error) {
	out, err := t.decodeBytes(ids)
	if err == nil && t.stripSpace && len(out) > 0 && out[0] == ' ' {
		out = out[1:] // SentencePiece's dummy prefix
	}
	return out, err
}

// DecodeContinuation is Decode of ids that continue a text, a generation
// after its prompt: a SentencePiece piece's leading space is the space
// between the prompt and it and is kept, as llama.cpp's, vLLM's and TGI's
// servers return a completion.
func (t *Tokenizer) DecodeContinuation(ids []int) (string, error) {
	b, err := t.decodeBytes(ids)
	if err != nil {
		return "", err
	}
	out, _ := appendLossy(nil, b, true)
	return string(out), nil
}

func (t *Tokenizer) decodeBytes(ids []int) ([]byte, error) {
	var out []byte
	for i, id := range ids {
		b, err := t.idBytes(id)
		if err != nil {
			return nil, fmt.Errorf("position %d: %w", i, err)
		}
		out = append(out, b...)
	}
	return out, nil
}

// Decode returns the text the ids stand for. Byte sequences that are not
// valid UTF-8 become U+FFFD, one per maximal invalid subpart, exactly as
// Python's bytes.decode("utf-8", errors="replace") (what Hugging Face's
// GPT-2 tokenizer does) and Rust's from_utf8_lossy do.
func (t *Tokenizer) Decode(ids []int) (string, error) {
	b, err := t.DecodeBytes(ids)
	if err != nil {
		return "", err
	}
	out, _ := appendLossy(nil, b, true)
	return string(out), nil
}

// TokenBytes returns the exact bytes of one token, as it reads inside a
// text: a SentencePiece piece's leading space included.
func (t *Tokenizer) TokenBytes(id int) ([]byte, error) { return t.idBytes(id) }

func (t *Tokenizer) idBytes(id int) ([]byte, error) {
	if id >= len(t.tokens) && id < t.padTo {
		return nil, nil // a padding row of the model's embedding
	}
	if id < 0 || id >= len(t.tokens) || t.tokens[id] == nil {
		return nil, fmt.Errorf("%w: %d (vocabulary size %d)", ErrInvalidID, id, len(t.tokens))
	}
	return t.tokens[id], nil
}

// StreamDecoder turns ids arriving one at a time into text, releasing text
// only at complete UTF-8 characters: an emoji split over two tokens comes
// out once, whole. Concatenating every Add result and the final Flush gives
// exactly Decode of all the ids. Not safe for concurrent use.
type StreamDecoder struct {
	t       *Tokenizer
	pending []byte // an incomplete UTF-8 character awaiting more bytes
	started bool   // a byte has come out (for SentencePiece's dummy prefix)
	cont    bool   // the stream continues a text: no dummy prefix to drop
}

// NewStreamDecoder starts an empty stream of a whole text, as Decode.
func (t *Tokenizer) NewStreamDecoder() *StreamDecoder {
	return &StreamDecoder{t: t}
}

// NewContinuationDecoder starts an empty stream of ids that continue a
// text, as DecodeContinuation: a generation after its prompt.
func (t *Tokenizer) NewContinuationDecoder() *StreamDecoder {
	return &StreamDecoder{t: t, started: true, cont: true}
}

// Add appends one token and returns the text it completes, possibly "".
// An invalid id is an error and leaves the stream unchanged.
func (d *StreamDecoder) Add(id int) (string, error) {
	b, err := d.t.idBytes(id)
	if err != nil {
		return "", err
	}
	if d.t.stripSpace && !d.started && len(b) > 0 {
		d.started = true
		if b[0] == ' ' {
			b = b[1:] // SentencePiece's dummy prefix, as DecodeBytes drops it
		}
	}
	d.pending = append(d.pending, b...)
	out, n := appendLossy(nil, d.pending, false)
	d.pending = append(d.pending[:0], d.pending[n:]...)
	return string(out), nil
}

// Held is the bytes of an unfinished character the stream holds back (a
// valid prefix of one, the tokens' so far), empty when it holds none. They
// are the stream's own until the next Add: read them, do not change them.
func (d *StreamDecoder) Held() []byte { return d.pending }

// Flush ends the stream: bytes of an unfinished character come out as
// U+FFFD. The decoder is then empty and can be reused.
func (d *StreamDecoder) Flush() string {
	out, _ := appendLossy(nil, d.pending, true)
	d.pending = d.pending[:0]
	d.started = d.cont
	return string(out)
}

// appendLossy appends src to dst as valid UTF-8 and returns how many bytes
// of src it consumed. Each maximal subpart of an ill-formed sequence (the
// longest prefix of a valid sequence that the next byte breaks off, or a
// single byte that starts none) becomes one U+FFFD: the Unicode Standard's
// recommended practice (chapter 3, "U+FFFD Substitution of Maximal
// Subparts"). If final is false, a valid but unfinished sequence at the end
// of src is left unconsumed, since later bytes may complete it.
func appendLossy(dst, src []byte, final bool) ([]byte, int) {
	i := 0
	for i < len(src) {
		c := src[i]
		if c < utf8.RuneSelf {
			dst = append(dst, c)
			i++
			continue
		}
		n, lo, hi := utf8seq.Shape(c)
		if n == 0 {
			dst = append(dst, "\uFFFD"...)
			i++
			continue
		}
		k := 1 // bytes of the sequence seen valid so far
		for ; k < n && i+k < len(src); k++ {
			b := src[i+k]
			if k == 1 && (b < lo || b > hi) || k > 1 && (b < 0x80 || b > 0xBF) {
				break
			}
		}
		switch {
		case k == n:
			dst = append(dst, src[i:i+n]...)
		case i+k == len(src) && !final:
			return dst, i
		default:
			dst = append(dst, "\uFFFD"...)
		}
		i += k
	}
	return dst, i
}
