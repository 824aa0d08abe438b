package generation

import (
	"fmt"
	"unicode/utf8"
)

// MaxStopBytes is the longest stop string a request may give (docs/api.md).
const MaxStopBytes = 100

// contextRule is the one context-length rule: a prompt of prompt tokens and
// newTokens generated after it must fit contextLength. field names what the
// caller should change.
func contextRule(field string, prompt, newTokens, contextLength int) *FieldError {
	if prompt+newTokens <= contextLength {
		return nil
	}
	e := &FieldError{Field: field, Code: CodeContextLength}
	if newTokens == 0 {
		e.Message = fmt.Sprintf("%d tokens exceed the context length %d", prompt, contextLength)
	} else {
		e.Value = newTokens
		e.Message = fmt.Sprintf("prompt of %d tokens + %d new tokens = %d exceeds the context length %d",
			prompt, newTokens, prompt+newTokens, contextLength)
	}
	return e
}

// promptRule: at least one token, every one in the vocabulary.
func promptRule(tokens []int, vocabSize int) *FieldError {
	return tokensRule("prompt", tokens, vocabSize, "empty; at least one token is needed")
}

func tokensRule(field string, tokens []int, vocabSize int, empty string) *FieldError {
	if len(tokens) == 0 {
		return &FieldError{Field: field, Code: CodeLength, Message: empty}
	}
	for i, id := range tokens {
		if e := TokenRule(field, id, vocabSize); e != nil {
			e.Message = fmt.Sprintf("token %d at index %d is outside the vocabulary [0, %d)", id, i, vocabSize)
			e.Value = nil
			return e
		}
	}
	return nil
}

// TokenRule is the vocabulary rule for one token id, reported under field:
// for routes that name each id of a list (prompt[0][3], tokens[2]).
func TokenRule(field string, id, vocabSize int) *FieldError {
	if id >= 0 && id < vocabSize {
		return nil
	}
	return &FieldError{Field: field, Code: CodeVocabulary, Message: fmt.Sprintf("token id must be 0..%d", vocabSize-1), Value: id}
}

// stopRules: at most MaxStop strings of 1..MaxStopBytes bytes of UTF-8.
func stopRules(stop []string) FieldErrors {
	if len(stop) > MaxStop {
		return FieldErrors{{Field: "stop", Code: CodeLength,
			Message: fmt.Sprintf("%d strings, at most %d are allowed", len(stop), MaxStop)}}
	}
	var es FieldErrors
	for i, s := range stop {
		field := fmt.Sprintf("stop[%d]", i)
		switch {
		case len(s) < 1 || len(s) > MaxStopBytes:
			es.add(&FieldError{Field: field, Code: CodeLength, Message: fmt.Sprintf("must be 1..%d bytes", MaxStopBytes)})
		case !utf8.ValidString(s):
			es.add(&FieldError{Field: field, Code: CodeUTF8, Message: "must be valid UTF-8"})
		}
	}
	return es
}

// ValidatePrompt checks tokens that are read but not continued (scoring,
// embeddings): at least one, in the vocabulary, within the context.
func ValidatePrompt(tokens []int, contextLength, vocabSize int) error {
	var es FieldErrors
	es.add(promptRule(tokens, vocabSize))
	es.add(contextRule("prompt", len(tokens), 0, contextLength))
	return es.err()
}

// ValidatePair checks a (context, continuation) pair for scoring: both
// non-empty and in the vocabulary, the continuation within the context
// (a longer pair loses its oldest context tokens, as lm-eval's does).
func ValidatePair(ctxTokens, contTokens []int, contextLength, vocabSize int) error {
	var es FieldErrors
	es.add(tokensRule("context", ctxTokens, vocabSize, "empty; condition on the BOS token, else <|endoftext|> (lm-eval's prefix_token_id), instead"))
	es.add(tokensRule("continuation", contTokens, vocabSize, "no tokens; there is nothing to score"))
	es.add(contextRule("continuation", len(contTokens), 0, contextLength))
	return es.err()
}
