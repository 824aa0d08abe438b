package generation

import (
	"context"

	"github.com/llorch/llorch-check/model"
)

// Decoder is what generation needs from a model. *model.Model satisfies it
// through NewModelDecoder; tests fake it.
type Decoder interface {
	// Prefill resets the decoder, runs the prompt and returns the logits [V]
	// of its last position.
	Prefill(ctx context.Context, tokens []int) ([]float32, error)
	// Step appends one token and returns its logits [V].
	Step(ctx context.Context, token int) ([]float32, error)
	ContextLength() int
	VocabSize() int
}

// rowScorer is an optional Decoder capability: logits of several trailing
// positions from one forward pass. LoglikelihoodTokens uses it when present
// and falls back to Prefill + Step otherwise.
type rowScorer interface {
	// Rows resets the decoder, runs tokens and calls fn with the logits of
	// each position j = from..len(tokens)-1, in order; the slice is reused
	// after fn returns.
	Rows(ctx context.Context, tokens []int, from int, fn func(j int, logits []float32) error) error
}

// scoreChunk is how many positions' logits ScoreRows holds at once: a
// scoring request over T tokens then needs chunk·V floats of logits, not
// T·V (1,000 tokens once held 200 MB).
var scoreChunk = 32

// SlotBytes estimates the most memory one sequence of m can need beyond
// the weights: a full-context KV cache, a chunk of scoring logits with one
// row's float64 log-softmax, and a chunk's activations. An orchestrator
// budgets a worker as weights + parallel × SlotBytes.
func SlotBytes(m *model.Model) int64 {
	c := m.Config
	chunk, V := int64(scoreChunk), int64(c.VocabSize)
	acts := 4 * chunk * int64(8*c.NEmbd+2*c.NInner) // residual, ln, qkv, attention, MLP buffers
	return c.CacheBytes() + 4*chunk*V + 8*V + acts
}

// ScoreRows runs tokens through m on cache c (reset first): the positions
// before from without logits, then the rest in chunks of scoreChunk, each
// position's logits passed to fn. Chunking changes no bits: every row of
// the forward pass is computed on its own.
func ScoreRows(ctx context.Context, m *model.Model, c *model.Cache, tokens []int, from int, fn func(j int, logits []float32) error) error {
	c.Reset()
	if from > 0 {
		if _, err := m.Forward(ctx, c, tokens[:from], model.ForwardOptions{}); err != nil {
			return err
		}
	}
	V := m.Config.VocabSize
	for c0 := from; c0 < len(tokens); c0 += scoreChunk {
		c1 := min(c0+scoreChunk, len(tokens))
		rows, err := m.Forward(ctx, c, tokens[c0:c1], model.ForwardOptions{AllLogits: true})
		if err != nil {
			return err
		}
		for j := c0; j < c1; j++ {
			if err := fn(j, rows[(j-c0)*V:(j-c0+1)*V]); err != nil {
				return err
			}
		}
	}
	return nil
}

// eosTokener is an optional Decoder capability: the model's end-of-text id.
// Without it generation uses GPT-2's 50256.
type eosTokener interface {
	EOS() int
}

// EOSToken is GPT-2's <|endoftext|>.
const EOSToken = 50256

// modelDecoder drives a *model.Model through one KV cache.
type modelDecoder struct {
	m     *model.Model
	cache *model.Cache
}

// NewModelDecoder returns a Decoder that owns one model.Cache (NPositions
// deep). Like the cache, it is for one sequence at a time; make one per
// concurrent request.
func NewModelDecoder(m *model.Model) Decoder {
	return &modelDecoder{m: m, cache: m.NewCache()}
}

func (d *modelDecoder) Prefill(ctx context.Context, tokens []int) ([]float32, error) {
	d.cache.Reset()
	return d.m.Forward(ctx, d.cache, tokens, model.ForwardOptions{})
}

func (d *modelDecoder) Step(ctx context.Context, token int) ([]float32, error) {
	return d.m.Forward(ctx, d.cache, []int{token}, model.ForwardOptions{})
}

// Rows is ScoreRows on the decoder's cache.
func (d *modelDecoder) Rows(ctx context.Context, tokens []int, from int, fn func(j int, logits []float32) error) error {
	return ScoreRows(ctx, d.m, d.cache, tokens, from, fn)
}

func (d *modelDecoder) ContextLength() int { return d.m.Config.NPositions }
func (d *modelDecoder) VocabSize() int     { return d.m.Config.VocabSize }
func (d *modelDecoder) EOS() int           { return d.m.Config.EOSTokenID }
