package generation

import (
	"context"
	"fmt"

	"github.com/llorch/llorch-check/kvcache"
	"github.com/llorch/llorch-check/model"
)

// Decoder is what generation needs from a model: a ModelDecoder, or a
// test's fake.
type Decoder interface {
	// Prefill resets the decoder, runs the prompt and returns the logits [V]
	// of its last position.
	Prefill(ctx context.Context, tokens []int) ([]float32, error)
	// Step appends one token and returns its logits [V], which may be a
	// buffer the decoder reuses: valid until its next Step or Prefill.
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

// scoreChunk is how many positions' logits ScoreRows (and Probe) holds at
// once: a
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
	return c.KVShape().CacheBytes() + 4*chunk*V + 8*V + acts
}

// ScoreRows runs tokens through m on cache c (reset first): the positions
// before from without logits, then the rest in chunks of scoreChunk, each
// position's logits passed to fn. Chunking changes no bits: every row of
// the forward pass is computed on its own; for the same reason positions
// before from that a prefix-caching pool still holds (Cache.ReusePrefix)
// are reused, not recomputed.
func ScoreRows(ctx context.Context, m *model.Model, c *kvcache.Cache, tokens []int, from int, fn func(j int, logits []float32) error) error {
	_, err := scoreRows(ctx, m, c, tokens, from, fn)
	return err
}

// scoreRows is ScoreRows, also returning the positions reused.
func scoreRows(ctx context.Context, m *model.Model, c *kvcache.Cache, tokens []int, from int, fn func(j int, logits []float32) error) (int, error) {
	c.Reset()
	m.PlanSequence(c, len(tokens)) // the chunks compute what one pass over tokens does
	reused := 0
	if from > 0 {
		reused = c.ReusePrefix(tokens[:from+1])
	}
	if from > reused {
		if _, err := m.Forward(ctx, c, tokens[reused:from], model.ForwardOptions{}); err != nil {
			return reused, err
		}
	}
	V := m.Config.VocabSize
	for c0 := from; c0 < len(tokens); c0 += scoreChunk {
		c1 := min(c0+scoreChunk, len(tokens))
		rows, err := m.Forward(ctx, c, tokens[c0:c1], model.ForwardOptions{AllLogits: true})
		if err != nil {
			return reused, err
		}
		for j := c0; j < c1; j++ {
			if err := fn(j, rows[(j-c0)*V:(j-c0+1)*V]); err != nil {
				return reused, err
			}
		}
	}
	return reused, nil
}

// eosTokener is an optional Decoder capability: the model's end-of-text id.
// Without it generation uses GPT-2's 50256.
type eosTokener interface {
	EOS() []int
}

// EOSToken is GPT-2's <|endoftext|>.
const EOSToken = 50256

// Batcher joins the decode steps of several sequences on one model into
// single passes over the weights (the server's). A sequence joins before
// its first step and leaves when it stops stepping, so that no batch waits
// for a step that will not come.
type Batcher interface {
	Join()
	Leave()
	// Step appends token to c in the next batch and returns its logits.
	Step(ctx context.Context, c *kvcache.Cache, token int) ([]float32, error)
}

// sequenceEnder is an optional Decoder capability: told when a generation
// stops stepping (Generate defers it).
type sequenceEnder interface {
	EndSequence()
}

// ModelDecoder drives a *model.Model through one KV cache, its decode
// steps alone or through a Batcher; prefill and scoring always run alone.
// Like the cache, it is for one sequence at a time: make one per
// concurrent request.
type ModelDecoder struct {
	m      *model.Model
	cache  *kvcache.Cache
	batch  Batcher // nil: every step runs alone
	joined bool
	cached int // prompt positions the last Prefill or Rows reused
}

// NewModelDecoder returns a decoder whose steps run alone, on a cache of
// its own.
func NewModelDecoder(m *model.Model) *ModelDecoder { return NewBatchedDecoder(m, nil, nil) }

// NewBatchedDecoder returns a decoder whose cache comes from pool (nil: a
// pool of its own, which gives back the blocks a sliding window left) and
// whose steps go through b (nil: alone).
func NewBatchedDecoder(m *model.Model, pool *kvcache.Pool, b Batcher) *ModelDecoder {
	if pool == nil {
		pool, _ = m.NewKVPool(kvcache.Options{FreeBehindWindow: true}) // the defaults are valid
	}
	c := pool.NewCache()
	return &ModelDecoder{m: m, cache: c, batch: b}
}

// EndSequence leaves the batcher: the sequence stopped stepping. It is safe
// to call any number of times.
func (d *ModelDecoder) EndSequence() {
	if d.joined {
		d.joined = false
		d.batch.Leave()
	}
}

// Reserve promises the coming sequence positions positions of a bounded
// pool, waiting while ctx lasts for running sequences to give blocks back
// (a server calls it when a request starts, so that no sequence runs out
// of blocks half way). An error wrapping kvcache.ErrFull means the
// pool could never hold that many.
func (d *ModelDecoder) Reserve(ctx context.Context, positions int) error {
	return d.cache.ReserveWait(ctx, positions)
}

// Release gives the cache's blocks and reservation back to the pool: the
// slot holding the decoder is idle. A prefix-caching pool keeps the full
// blocks for the prompts that share them.
func (d *ModelDecoder) Release() {
	d.EndSequence()
	d.cache.Close()
}

// CachedTokens is how many positions of the last prompt (Prefill, Rows)
// came from the pool's prefix cache instead of a forward pass.
func (d *ModelDecoder) CachedTokens() int { return d.cached }

// chunkPrefiller is an optional Batcher capability: running a prompt
// through the batches, in chunks beside the other sequences' decode steps
// (the server's chunked prefill).
type chunkPrefiller interface {
	Prefill(ctx context.Context, c *kvcache.Cache, tokens []int) ([]float32, error)
	PrefillChunk() int // positions a step carries; 0: prompts run alone
}

// Prefill runs the prompt after the longest prefix the pool still holds:
// through the batcher when it takes prompts (the sequence joins it here,
// so its chunks and then its steps batch with the others), else alone.
func (d *ModelDecoder) Prefill(ctx context.Context, tokens []int) ([]float32, error) {
	d.EndSequence()
	d.cache.Reset()
	d.m.PlanSequence(d.cache, len(tokens)) // chunks or not, what one pass over the prompt computes
	d.cached = d.cache.ReusePrefix(tokens)
	rest := tokens[d.cached:]
	cp, ok := d.batch.(chunkPrefiller)
	if !ok || cp.PrefillChunk() <= 0 || len(rest) == 0 || len(tokens) > d.cache.Cap() || !inVocabulary(rest, d.m.Config.VocabSize) {
		// A bad prompt would fail the whole batch; alone it fails alone.
		return d.m.Forward(ctx, d.cache, rest, model.ForwardOptions{})
	}
	d.joined = true
	d.batch.Join()
	logits, err := cp.Prefill(ctx, d.cache, rest)
	if err != nil {
		d.EndSequence() // the others must not wait for it
	}
	return logits, err
}

func (d *ModelDecoder) Step(ctx context.Context, token int) ([]float32, error) {
	if d.batch == nil || d.cache.Len() >= d.cache.Cap() || token < 0 || token >= d.m.Config.VocabSize {
		// A bad step would fail the whole batch; a step alone refuses it
		// alone. DecodeBatch, not Forward, so the logits land in the
		// cache's own buffer instead of fresh memory every step.
		d.EndSequence()
		logits, err := d.m.DecodeBatch(ctx, []*kvcache.Cache{d.cache}, []int{token})
		if err != nil {
			return nil, err
		}
		return logits[0], nil
	}
	if !d.joined {
		d.joined = true
		d.batch.Join()
	}
	logits, err := d.batch.Step(ctx, d.cache, token)
	if err != nil {
		d.EndSequence() // the sequence ends here; the others must not wait for it
	}
	return logits, err
}

// Rows is ScoreRows on the decoder's cache.
func (d *ModelDecoder) Rows(ctx context.Context, tokens []int, from int, fn func(j int, logits []float32) error) error {
	d.EndSequence()
	var err error
	d.cached, err = scoreRows(ctx, d.m, d.cache, tokens, from, fn)
	return err
}

// Probe runs tokens from an empty cache in chunks of scoreChunk positions
// with probe attached, for what a pass computes rather than its logits
// (the server's embeddings).
func (d *ModelDecoder) Probe(ctx context.Context, tokens []int, probe model.Probe) error {
	d.EndSequence()
	d.cache.Reset()
	d.cached = 0
	d.m.PlanSequence(d.cache, len(tokens))
	if err := d.cache.ReserveWait(ctx, len(tokens)); err != nil {
		return err
	}
	for c0 := 0; c0 < len(tokens); c0 += scoreChunk {
		c1 := min(c0+scoreChunk, len(tokens))
		if _, err := d.m.Forward(ctx, d.cache, tokens[c0:c1], model.ForwardOptions{Probe: probe}); err != nil {
			return fmt.Errorf("positions %d..%d: %w", c0, c1-1, err)
		}
	}
	return nil
}

func (d *ModelDecoder) ContextLength() int { return d.m.Config.NPositions }
func (d *ModelDecoder) VocabSize() int     { return d.m.Config.VocabSize }
func (d *ModelDecoder) EOS() []int         { return d.m.Config.EOSTokens() }

func inVocabulary(tokens []int, V int) bool {
	for _, t := range tokens {
		if t < 0 || t >= V {
			return false
		}
	}
	return true
}
