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
	// Rows resets the decoder, runs tokens and returns the logits of
	// positions from..len(tokens)-1 as [len(tokens)-from, V].
	Rows(ctx context.Context, tokens []int, from int) ([]float32, error)
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

// Rows runs the positions before from without computing their logits, then
// the rest with all logits, so scoring a long context costs [R,V] logits,
// not [T,V].
func (d *modelDecoder) Rows(ctx context.Context, tokens []int, from int) ([]float32, error) {
	d.cache.Reset()
	if from > 0 {
		if _, err := d.m.Forward(ctx, d.cache, tokens[:from], model.ForwardOptions{}); err != nil {
			return nil, err
		}
	}
	return d.m.Forward(ctx, d.cache, tokens[from:], model.ForwardOptions{AllLogits: true})
}

func (d *modelDecoder) ContextLength() int { return d.m.Config.NPositions }
func (d *modelDecoder) VocabSize() int     { return d.m.Config.VocabSize }
func (d *modelDecoder) EOS() int           { return d.m.Config.EOSTokenID }
