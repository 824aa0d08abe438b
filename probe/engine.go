package probe

import (
	"context"
)

// engine is what the checks common to every dialect (invariance, the
// corpus verdict) ask of a server: greedy generation, and teacher forcing.
// Each dialect that can answer them implements it over its own API.
type engine interface {
	// generate asks for req.n greedy tokens after req.prompt.
	generate(ctx context.Context, req genRequest) (genAnswer, error)
	// force teacher-forces tokens: for every j in [from, len(tokens)-1)
	// the log-probability the server gives tokens[j+1] after tokens[:j+1]
	// and its top alternatives. A value the API cannot tell is NaN.
	force(ctx context.Context, tokens []int, from, top int) ([]forced, error)
	// exposes says which of the generic checks the API can make, and why
	// not where it cannot.
	exposes() exposure
	// lastRequest is the body of the last request sent, for a failing
	// check to show.
	lastRequest() string
}

// exposure is what an engine's API lets the generic checks see.
type exposure struct {
	stream   string // why streaming cannot be compared; "" when it can
	logprobs string // why generated tokens' log-probabilities are not shown
	target   string // why a forced token's own log-probability is not shown
}

// genRequest is one greedy generation.
type genRequest struct {
	prompt []int
	n      int
	top    int // alternatives per step; 0 asks for no log-probabilities
	stream bool
}

// genAnswer is a generation as the API reports it. IDs are nil where the
// API gives text only and no way to map it back.
type genAnswer struct {
	ids  []int
	text string
	lps  []float64 // per generated token; nil without log-probabilities
	alts [][]alt
}

// forced is one teacher-forced position.
type forced struct {
	lp   float64 // of the forced token; NaN when the API does not tell
	alts []alt
	skip string // why the position could not be asked at all; "" when it was
}
