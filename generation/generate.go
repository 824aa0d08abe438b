package generation

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/llorch/llorch-check/sampling"
	"github.com/llorch/llorch-check/tokenizer"
)

// ErrNoUsableLogits is Generate's error when a step's logits give no token
// a chance (NaN, or nothing left): a numerical failure of the model, which
// a validator reports as a failed check rather than as bad input.
var ErrNoUsableLogits = errors.New("the model's logits have no usable value (NaN or empty)")

// Generate samples up to req.MaxTokens tokens (fitted, see Request.Fit)
// after req.Prompt and calls
// onToken (if not nil) with each one as soon as it is chosen. It stops after
// EOS, after MaxTokens, when the generated text contains a stop string, or
// when ctx is cancelled.
//
// An invalid request is an error before any model work. tok may be nil: the
// Text fields are then empty and stop strings are an error. Cancellation is
// not an error: the partial Result comes back with StopReason
// StopCancelled and a nil error (ctx is checked before every forward pass,
// and the model checks it between layers), and its Text includes text held
// back for a possible stop string, since no later token can complete one.
// An error from onToken ends the generation and is returned as is, with the
// partial Result. Greedy decoding is req.Params.Greedy(), e.g.
// Params{Temperature: 0}; greedy results do not depend on the seed.
func Generate(ctx context.Context, d Decoder, tok *tokenizer.Tokenizer, req Request, onToken func(Token) error) (Result, error) {
	if err := req.Validate(d.ContextLength(), d.VocabSize()); err != nil {
		return Result{}, err
	}
	if tok == nil && len(req.Stop) > 0 {
		return Result{}, &FieldError{Field: "stop", Code: CodeUnsupported, Message: "stop strings need a tokenizer to decode the generated text"}
	}
	if tok == nil && req.Grammar != nil {
		return Result{}, &FieldError{Field: "grammar", Code: CodeUnsupported, Message: "a grammar needs a tokenizer to spell the tokens"}
	}
	if e, ok := d.(sequenceEnder); ok {
		defer e.EndSequence()
	}
	req = req.Fit(d.ContextLength()).Seeded()
	seed := *req.Seed
	res := Result{Seed: seed, PromptTokens: len(req.Prompt), Tokens: make([]int, 0, req.MaxTokens)}
	if req.MaxTokens == 0 {
		res.StopReason = StopMaxTokens
		return res, nil
	}
	eos := []int{EOSToken}
	if e, ok := d.(eosTokener); ok {
		eos = e.EOS()
	}
	var cons *constraint
	if req.Grammar != nil {
		cons = newConstraint(req.Grammar, tok, eos)
	}
	sampler := sampling.NewSampler(seed)
	text := newTextStream(tok, req.Stop, eos)
	var out strings.Builder
	cancelled := func() (Result, error) {
		out.WriteString(text.drain())
		res.Text, res.StopReason = out.String(), StopCancelled
		return res, nil
	}
	// failed keeps the partial result for a caller that wants to report it.
	failed := func(err error) (Result, error) {
		res.Text = out.String()
		return res, err
	}

	if ctx.Err() != nil {
		return cancelled()
	}
	if err := reserve(ctx, d, len(req.Prompt)+req.MaxTokens, "max_tokens"); err != nil {
		if ctx.Err() != nil {
			return cancelled()
		}
		return failed(err)
	}
	t0 := time.Now()
	logits, err := d.Prefill(ctx, req.Prompt)
	if err != nil {
		if ctx.Err() != nil {
			return cancelled()
		}
		return failed(fmt.Errorf("prefill of %d tokens: %w", len(req.Prompt), err))
	}
	res.CachedTokens, res.PrefillTime = cachedTokens(d), time.Since(t0)
	history := slices.Grow(slices.Clone(req.Prompt), req.MaxTokens)
	probs, scratch := make([]float32, len(logits)), make([]float64, len(logits)) // every token's, reused
	for i := 0; ; i++ {
		in := logits
		if cons != nil {
			if in, err = cons.logits(logits); err != nil {
				return failed(fmt.Errorf("token %d: %w", i, err))
			}
		}
		probs = sampling.ProcessInto(probs, scratch, in, history, req.Params)
		var id int
		if req.Params.Greedy() {
			id = sampling.Argmax(probs)
		} else {
			id = sampler.Sample(probs)
		}
		if id < 0 || !(probs[id] > 0) {
			return failed(fmt.Errorf("token %d: %w", i, ErrNoUsableLogits))
		}
		res.Tokens = append(res.Tokens, id)
		history = append(history, id)
		isEOS := slices.Contains(eos, id)
		if cons != nil && !isEOS {
			if err := cons.accept(id); err != nil { // the mask allowed it: a bug, not bad input
				return failed(fmt.Errorf("token %d (id %d): %w", i, id, err))
			}
		}
		final := isEOS || len(res.Tokens) == req.MaxTokens
		piece, matched, err := text.add(id, final)
		if err != nil {
			return failed(fmt.Errorf("token %d (id %d): %w", i, id, err))
		}
		out.WriteString(piece)
		if onToken != nil {
			t := Token{Index: i, ID: id, Text: piece}
			if req.LogProbs {
				t.LogProb, t.TopLogProbs = tokenLogProbs(logits, id, req.TopLogProbs)
			}
			if err := onToken(t); err != nil {
				return failed(err)
			}
		}
		switch {
		case matched != "":
			res.StopReason, res.StopSequence = StopSequence, matched
		case isEOS:
			res.StopReason = StopEOS
		case final:
			res.StopReason = StopMaxTokens
		}
		if res.StopReason != "" {
			res.Text = out.String()
			return res, nil
		}
		if ctx.Err() != nil {
			return cancelled()
		}
		if logits, err = d.Step(ctx, id); err != nil {
			if ctx.Err() != nil {
				return cancelled()
			}
			return failed(fmt.Errorf("token %d (id %d): %w", i, id, err))
		}
	}
}
