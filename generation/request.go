package generation

import (
	"fmt"
	"unicode/utf8"

	"github.com/llorch/llorch-check/sampling"
)

// MaxStop is the most stop strings a request may give (API.md).
const MaxStop = 4

// Stop reasons of a Result, as API.md's end event names them.
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
	Prompt    []int
	MaxTokens int
	Params    sampling.Params
	Seed      *uint64
	Stop      []string
	// LogProbs asks for each Token's LogProb and its TopLogProbs most
	// probable alternatives (0: none), as OpenAI's legacy logprobs report
	// them. Off by default because it costs a log-softmax per token.
	LogProbs    bool
	TopLogProbs int
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
}

// Validate checks a request against a model before anything runs, so that a
// request that cannot fit is the caller's error, not a failure midway.
// The whole generation must fit the context: len(Prompt)+MaxTokens ≤
// contextLength (the reference's "context_length" stop can therefore never
// happen here).
func (r Request) Validate(contextLength, vocabSize int) error {
	if len(r.Prompt) == 0 {
		return fmt.Errorf("prompt: empty; at least one token is needed")
	}
	for i, id := range r.Prompt {
		if id < 0 || id >= vocabSize {
			return fmt.Errorf("prompt: token %d at index %d is outside the vocabulary [0, %d)", id, i, vocabSize)
		}
	}
	if r.MaxTokens < 1 {
		return fmt.Errorf("max_tokens %d: must be ≥ 1", r.MaxTokens)
	}
	if n := len(r.Prompt) + r.MaxTokens; n > contextLength {
		return fmt.Errorf("max_tokens %d: prompt of %d tokens + %d new tokens = %d exceeds the context length %d",
			r.MaxTokens, len(r.Prompt), r.MaxTokens, n, contextLength)
	}
	if err := r.Params.Validate(vocabSize); err != nil {
		return err
	}
	if r.TopLogProbs < 0 || r.TopLogProbs > vocabSize {
		return fmt.Errorf("top_logprobs %d: must be 0..%d", r.TopLogProbs, vocabSize)
	}
	if len(r.Stop) > MaxStop {
		return fmt.Errorf("stop: %d strings, at most %d are allowed", len(r.Stop), MaxStop)
	}
	for i, s := range r.Stop {
		switch {
		case s == "":
			return fmt.Errorf("stop[%d]: empty string", i)
		case !utf8.ValidString(s):
			return fmt.Errorf("stop[%d] %q: not valid UTF-8", i, s)
		}
	}
	return nil
}
