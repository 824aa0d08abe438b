package generation

import (
	"fmt"
	"time"

	"github.com/llorch/llorch-check/grammar"
	"github.com/llorch/llorch-check/sampling"
)

// MaxStop is the most stop strings a request may give (docs/api.md).
const MaxStop = 4

// Stop reasons of a Result, as docs/api.md's end event names them.
const (
	StopMaxTokens = "max_tokens"
	StopEOS       = "eos"
	StopSequence  = "stop_sequence"
	StopCancelled = "cancelled"
)

// Request is one generation. Seed nil means draw one (Result.Seed reports
// it). Stop strings end the generation where they first appear in the
// generated text (not the prompt).
type Request struct {
	Prompt []int
	// MaxTokens is the most tokens to generate. A caller's MaxTokens that
	// does not fit the context is an error, never silently cut; with
	// DefaultMaxTokens it is a default instead, which shrinks to the room
	// the context leaves (Fit), so a prompt that fits never fails for it.
	MaxTokens        int
	DefaultMaxTokens bool
	// AllowEmpty lets MaxTokens be 0: nothing is generated (OpenAI's echo
	// with max_tokens 0 only scores the prompt).
	AllowEmpty bool
	Params     sampling.Params
	Seed       *uint64
	Stop       []string
	// LogProbs asks for each Token's LogProb and its TopLogProbs most
	// probable alternatives (0: none), as OpenAI's legacy logprobs report
	// them. Off by default because it costs a log-softmax per token.
	LogProbs    bool
	TopLogProbs int
	// Grammar, if set, constrains the generated text to its sentences:
	// each step gives the tokens that cannot continue one probability 0
	// (the others keep their odds), and end of text is allowed only once
	// the text is whole (constrain.go).
	Grammar *grammar.Grammar
}

// Token is one generated token as it is streamed. Text is the text this
// token makes releasable: whole UTF-8 characters only, never reaching into a
// stop string (text that might start one is held back and comes out with a
// later token), so it may be "".
type Token struct {
	Index int
	ID    int
	Text  string
	// LogProb and TopLogProbs are set when Request.LogProbs is: the
	// log-probability of ID under the model's raw distribution (before the
	// logit processors, as vLLM and OpenAI report it) and the most probable
	// tokens of that distribution, most probable first.
	LogProb     float64
	TopLogProbs []TokenLogProb
}

// TokenLogProb is one token id with its log-probability.
type TokenLogProb struct {
	ID      int
	LogProb float64
}

// Result is a finished (or cancelled) generation. Tokens are the generated
// ids only, including a final EOS or the token that completed a stop string;
// Text is the generated text only, without EOS's text and ending before the
// stop string. StopSequence is the stop string that matched, if any.
type Result struct {
	Tokens       []int
	Text         string
	StopReason   string
	StopSequence string
	Seed         uint64
	PromptTokens int
	CachedTokens int           // of PromptTokens, taken from the KV cache's prefix cache
	PrefillTime  time.Duration // of the prompt's forward pass
}

// Validate checks a request against a model before anything runs, so that a
// request that cannot fit is the caller's error, not a failure midway. The
// error is FieldErrors naming every field at fault. The whole generation
// must fit the context: len(Prompt)+MaxTokens ≤ contextLength (the
// reference's "context_length" stop can therefore never happen here).
func (r Request) Validate(contextLength, vocabSize int) error {
	var es FieldErrors
	es.add(promptRule(r.Prompt, vocabSize))
	es.add(r.maxTokensRule(contextLength))
	es.add(paramError(r.Params.Validate(vocabSize)))
	if r.TopLogProbs < 0 || r.TopLogProbs > vocabSize {
		es.add(&FieldError{Field: "top_logprobs", Code: CodeRange, Value: r.TopLogProbs,
			Message: fmt.Sprintf("must be 0..%d", vocabSize)})
	}
	es = append(es, stopRules(r.Stop)...)
	return es.err()
}

// maxTokensRule is MaxTokens' lower bound and the context-length rule.
func (r Request) maxTokensRule(contextLength int) *FieldError {
	least := 1
	if r.AllowEmpty {
		least = 0
	}
	n := r.Fit(contextLength).MaxTokens
	switch {
	case r.MaxTokens < least:
		return &FieldError{Field: "max_tokens", Code: CodeRange, Value: r.MaxTokens, Message: fmt.Sprintf("must be ≥ %d", least)}
	case r.DefaultMaxTokens && n < least:
		return &FieldError{Field: "max_tokens", Code: CodeContextLength,
			Message: fmt.Sprintf("prompt of %d tokens leaves no room to generate in the context length %d", len(r.Prompt), contextLength)}
	}
	return contextRule("max_tokens", len(r.Prompt), n, contextLength)
}

// Fit is r with a default MaxTokens shrunk to the room contextLength
// leaves after the prompt; a caller's MaxTokens stays as it is.
func (r Request) Fit(contextLength int) Request {
	if r.DefaultMaxTokens {
		r.MaxTokens = min(r.MaxTokens, contextLength-len(r.Prompt))
	}
	return r
}

// Seeded is r with a seed: its own, or one drawn now. It is the one place a
// seed is chosen, so a caller that announces the seed before generating
// (the worker's started event) announces the one Generate uses.
func (r Request) Seeded() Request {
	if r.Seed == nil {
		seed := sampling.RandomSeed()
		r.Seed = &seed
	}
	return r
}
