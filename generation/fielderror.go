package generation

import (
	"errors"
	"fmt"
	"strings"

	"github.com/llorch/llorch-check/sampling"
)

// Codes of a FieldError: which kind of rule the field breaks. The worker
// API reports them as an error's "constraint".
const (
	CodeContextLength = "context_length" // the tokens do not fit the model's context
	CodeRange         = "range"          // a number outside its interval
	CodeLength        = "length"         // too few or too many items, or bytes
	CodeVocabulary    = "vocabulary"     // a token id outside the vocabulary
	CodeUTF8          = "utf8"           // text that is not valid UTF-8
	CodeUnsupported   = "unsupported"    // a setting this call cannot honour
)

// FieldError is one request field that breaks a rule. Field uses the API's
// names (max_tokens, stop[1], top_p); a route reports it in its own wire
// shape, under its own name for the field where that differs.
type FieldError struct {
	Field   string
	Code    string
	Message string
	Value   any // the offending value, when it is worth echoing
}

func (e *FieldError) Error() string {
	if e.Value != nil {
		return fmt.Sprintf("%s %v: %s", e.Field, e.Value, e.Message)
	}
	return e.Field + ": " + e.Message
}

// FieldErrors is every rule a request breaks, in field order. Validators
// return it as their error (nil when empty).
type FieldErrors []*FieldError

func (es FieldErrors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "; ")
}

// Unwrap lets errors.As find each FieldError.
func (es FieldErrors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

func (es *FieldErrors) add(e *FieldError) {
	if e != nil {
		*es = append(*es, e)
	}
}

func (es FieldErrors) err() error {
	if len(es) == 0 {
		return nil
	}
	return es
}

// AsFieldErrors returns the field errors err holds, nil if it holds none.
func AsFieldErrors(err error) FieldErrors {
	var es FieldErrors
	if errors.As(err, &es) {
		return es
	}
	var e *FieldError
	if errors.As(err, &e) {
		return FieldErrors{e}
	}
	return nil
}

// paramError is sampling's refusal of a setting as a FieldError.
func paramError(err error) *FieldError {
	if err == nil {
		return nil
	}
	var pe *sampling.ParamError
	if errors.As(err, &pe) {
		return &FieldError{Field: pe.Param, Code: CodeRange, Message: pe.Message, Value: pe.Value}
	}
	return &FieldError{Field: "params", Code: CodeRange, Message: err.Error()}
}
