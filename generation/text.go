package generation

import (
	"slices"

	"github.com/llorch/llorch-check/tokenizer"
)

// textStream turns generated ids into releasable text: whole UTF-8
// characters (StreamDecoder), never past a stop string (stopMatcher). EOS
// contributes no text. A nil tokenizer gives no text at all.
type textStream struct {
	dec  *tokenizer.StreamDecoder
	stop stopMatcher
	eos  []int
}

func newTextStream(tok *tokenizer.Tokenizer, stops []string, eos []int) *textStream {
	if tok == nil {
		return nil
	}
	// A generation continues its prompt: a SentencePiece piece's leading
	// space is text, as servers return it.
	return &textStream{dec: tok.NewContinuationDecoder(), stop: stopMatcher{stops: stops}, eos: eos}
}

// add decodes id and returns the text it releases and the stop string it
// completed, if any. final says no token follows, so everything pending is
// released (an unfinished character as U+FFFD, as Decode would).
func (t *textStream) add(id int, final bool) (text, matched string, err error) {
	if t == nil {
		return "", "", nil
	}
	piece := ""
	if !slices.Contains(t.eos, id) {
		if piece, err = t.dec.Add(id); err != nil {
			return "", "", err
		}
	}
	if final {
		piece += t.dec.Flush()
	}
	text, matched = t.stop.feed(piece)
	if final && matched == "" {
		text += t.stop.flush()
	}
	return text, matched, nil
}

// drain releases whatever is pending when generation ends without a final
// token (cancellation).
func (t *textStream) drain() string {
	if t == nil {
		return ""
	}
	text, _ := t.stop.feed(t.dec.Flush())
	return text + t.stop.flush()
}
