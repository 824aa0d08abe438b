package references

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalid is wrapped by every error about the content of a reference set:
// a missing, unreadable or corrupt file, a manifest that breaks FORMAT.md, a
// tensor whose dtype or shape disagrees with the manifest, or weights that
// are not the ones the set was made from. Callers map it to "bad input"
// (exit code 2) with errors.Is.
var ErrInvalid = errors.New("invalid reference set")

// ErrWeightsMismatch is wrapped (besides ErrInvalid) by CheckWeights when the
// weights file is not the one the reference set was made from, so a caller
// can tell "wrong model" apart from "broken set".
var ErrWeightsMismatch = errors.New("weights do not match the reference set")

// ErrTokenizerMismatch is wrapped (besides ErrInvalid) by CheckTokenizer
// when the model directory's tokenizer is not the one that gave the set's
// token ids.
var ErrTokenizerMismatch = errors.New("tokenizer does not match the reference set")

// Error locates one problem: the file it is in and, for manifest.json, the
// JSON field (such as "tensors[12].shape"). It unwraps to both ErrInvalid and
// the underlying cause, so errors.Is works for either (e.g. fs.ErrNotExist).
type Error struct {
	Path  string // file the problem is in
	Field string // JSON path inside Path, empty when not about a field
	Err   error  // what is wrong
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Path)
	if e.Field != "" {
		b.WriteString(": ")
		b.WriteString(e.Field)
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

// Unwrap exposes ErrInvalid next to the cause.
func (e *Error) Unwrap() []error { return []error{ErrInvalid, e.Err} }

func errorf(path, field, format string, args ...any) *Error {
	return &Error{Path: path, Field: field, Err: fmt.Errorf(format, args...)}
}

// maxProblems bounds how many problems one error reports: a broken generator
// tends to repeat one mistake for every tensor, and the first few say it all.
const maxProblems = 20

// problems collects every validation failure of one manifest so a user fixes
// them in one round instead of one per run.
type problems struct {
	path string
	list []error
	more int
}

func (p *problems) add(field, format string, args ...any) {
	p.addErr(errorf(p.path, field, format, args...))
}

func (p *problems) addErr(err error) {
	if len(p.list) >= maxProblems {
		p.more++
		return
	}
	p.list = append(p.list, err)
}

func (p *problems) err() error {
	switch {
	case len(p.list) == 0:
		return nil
	case len(p.list) == 1:
		return p.list[0]
	}
	errs := p.list
	if p.more > 0 {
		errs = append(errs, &Error{Path: p.path, Err: fmt.Errorf("%d more problems not shown", p.more)})
	}
	return errors.Join(errs...)
}
