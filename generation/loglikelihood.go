package generation

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/llorch/llorch-check/sampling"
	"github.com/llorch/llorch-check/tokenizer"
)

// Loglikelihood is the score of a continuation given a context: LL is the
// sum of the continuation tokens' log-probabilities (float64), IsGreedy
// whether greedy decoding would have produced exactly those tokens.
// ContextTokens and ContinuationTokens are the tokens that were scored.
type Loglikelihood struct {
	LL                 float64
	IsGreedy           bool
	ContextTokens      []int
	ContinuationTokens []int
}

// EncodePair tokenizes a (context, continuation) pair as
// lm-evaluation-harness does, so scores are comparable with published ones:
// trailing whitespace of the context moves to the front of the continuation,
// the pair is encoded as one text, and the continuation is whatever follows
// the separately encoded context (BPE merges across the boundary land in the
// continuation). An empty context conditions on PrefixToken; so does a
// context that was only whitespace (lm-eval would score the continuation
// with no context at all there, which a causal model cannot do). A
// tokenizer without a prefix token makes an empty context a FieldError of
// field "context".
//
// Special tokens written in the text ("<|endoftext|>") are encoded as such,
// as Hugging Face's tokenizer (lm-eval's) and pytorch/dump_references.py do.
func EncodePair(tok *tokenizer.Tokenizer, context, continuation string) (ctxTokens, contTokens []int, err error) {
	prefix := func(whole []int) ([]int, []int, error) {
		id, err := PrefixToken(tok)
		if err != nil {
			return nil, nil, err
		}
		return []int{id}, whole, nil
	}
	if context == "" {
		return prefix(tok.EncodeSpecial(continuation))
	}
	trimmed := strings.TrimRightFunc(context, isPythonSpace)
	continuation = context[len(trimmed):] + continuation
	context = trimmed
	whole := tok.EncodeSpecial(context + continuation)
	ctxTokens = tok.EncodeSpecial(context)
	if len(ctxTokens) == 0 {
		return prefix(whole)
	}
	// The context's encoding is a prefix of the whole's unless a merge
	// crosses the boundary; lm-eval slices by length regardless.
	return ctxTokens, slices.Clone(whole[min(len(ctxTokens), len(whole)):]), nil
}

// PrefixToken is the token an empty context conditions on, lm-evaluation-
// harness's prefix_token_id: the tokenizer's BOS when it has one (the
// Llama family's <s>, whether or not prompts start with it), else its
// end-of-text token (GPT-2's <|endoftext|>, 50256, which is also its BOS
// in Hugging Face's files). Without either it is a FieldError of field
// "context": any other id would be a meaningless condition.
func PrefixToken(tok *tokenizer.Tokenizer) (int, error) {
	if id, _ := tok.BOS(); id >= 0 {
		return id, nil
	}
	if id := tok.EOT(); id >= 0 {
		return id, nil
	}
	return 0, FieldErrors{{Field: "context", Code: CodeUnsupported,
		Message: "is empty, and this tokenizer has neither a BOS nor an end-of-text token to condition on (lm-eval's prefix_token_id): give the pair a context"}}
}

// isPythonSpace is Python's str.isspace, which str.rstrip uses: Unicode
// White_Space plus the information separators U+001C–U+001F.
func isPythonSpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

// LoglikelihoodTokens scores contTokens after ctxTokens with one forward
// pass over (ctx+cont)[:-1], as lm-eval does: if the pair is longer than the
// context length plus one, its oldest tokens are dropped (left truncation),
// and position i's logits score token i+1. Each log-probability is a float64
// log-softmax; is_greedy requires every continuation token to be the argmax
// (ties to the lowest id).
func LoglikelihoodTokens(ctx context.Context, d Decoder, ctxTokens, contTokens []int) (Loglikelihood, error) {
	n := d.ContextLength()
	if err := ValidatePair(ctxTokens, contTokens, n, d.VocabSize()); err != nil {
		return Loglikelihood{}, err
	}
	inp := PairInput(ctxTokens, contTokens, n)
	from := len(inp) - len(contTokens)
	res := Loglikelihood{IsGreedy: true, ContextTokens: slices.Clone(ctxTokens), ContinuationTokens: slices.Clone(contTokens)}
	err := eachRow(ctx, d, inp, from, func(j int, row []float32) error {
		target := contTokens[j-from]
		res.LL += sampling.LogSoftmax(row)[target]
		if sampling.Argmax(row) != target {
			res.IsGreedy = false
		}
		return nil
	})
	if err != nil {
		return Loglikelihood{}, err
	}
	return res, nil
}

// PairInput is what the forward of a log-likelihood pair runs over: the
// context and continuation cut to their last n+1 tokens (lm-evaluation-
// harness's truncation to a context of n), less the last token.
func PairInput(ctxTokens, contTokens []int, n int) []int {
	whole := slices.Concat(ctxTokens, contTokens)
	if len(whole) > n+1 {
		whole = whole[len(whole)-(n+1):]
	}
	return whole[:len(whole)-1]
}

// eachRow calls fn with the logits of positions from..len(tokens)-1 in
// order, from chunked forward passes when the decoder can, else by prefill
// and steps; no more than a chunk of rows is held at once.
func eachRow(ctx context.Context, d Decoder, tokens []int, from int, fn func(j int, logits []float32) error) error {
	if err := reserve(ctx, d, len(tokens), "prompt"); err != nil {
		return err
	}
	if s, ok := d.(rowScorer); ok {
		if err := s.Rows(ctx, tokens, from, fn); err != nil {
			return fmt.Errorf("forward over %d tokens: %w", len(tokens), err)
		}
		return nil
	}
	logits, err := d.Prefill(ctx, tokens[:from+1])
	if err != nil {
		return fmt.Errorf("prefill of %d tokens: %w", from+1, err)
	}
	for j := from; ; j++ {
		if err := fn(j, logits); err != nil {
			return err
		}
		if j+1 == len(tokens) {
			return nil
		}
		if logits, err = d.Step(ctx, tokens[j+1]); err != nil {
			return fmt.Errorf("step: %w", err)
		}
	}
}
