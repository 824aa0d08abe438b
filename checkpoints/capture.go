package checkpoints

import (
	"context"
	"fmt"
	"slices"

	"github.com/llorch/llorch-check/kvcache"
	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/tensors"
)

// tensorKey identifies a captured tensor within one case.
type tensorKey struct {
	name  string
	layer int
}

// captured holds copies of what the probe saw, plus the cache run.
type captured struct {
	tensors map[tensorKey]model.Captured
	keep    map[string]bool
}

// captureSpec says which tensors to keep, whether to make checkpoint 3's
// incremental run, and the KV cache the forward runs on.
type captureSpec struct {
	names       map[string]bool
	incremental bool
	kv          kvcache.Options // the zero value: float32, as m.NewCache
	force       *model.ForcedKV // stored in place of the forward's own keys and values (kvforce.go); nil: none
	// inspect, if set, sees every tensor the forward emits, before names
	// decides whether a copy is kept (stream.go).
	inspect func(model.Captured)
	// logitRows, if not nil, are the only positions whose logits the
	// probed forward computes (model.ForwardOptions.LogitRows).
	logitRows []int
}

func (c *captured) get(name string, layer int) (model.Captured, bool) {
	t, ok := c.tensors[tensorKey{name, layer}]
	return t, ok
}

func (c *captured) put(t model.Captured) {
	if !c.keep[t.Name] {
		return
	}
	key := tensorKey{t.Name, t.Layer}
	if !t.Whole() { // a part: kept in its place in the whole tensor
		whole, ok := c.tensors[key]
		if !ok || t.Off == 0 {
			whole = t
			whole.Off, whole.Shape, whole.Data = 0, slices.Clone(t.Shape), make([]float32, elements(t.Shape))
		}
		copy(whole.Data[t.Off:], t.Data)
		c.tensors[key] = whole
		return
	}
	t.Data = slices.Clone(t.Data)
	t.Shape = slices.Clone(t.Shape)
	c.tensors[key] = t
}

// probeValues is the probed forward's model.ForwardOptions.ProbeValues:
// 0, its default, but for the tests, which make it small so that tiny
// models' scores come in parts.
var probeValues = 0

// capture runs the production forward over tokens with a probe that keeps
// the tensors spec names. With spec.incremental it also prefills T−1
// tokens into a fresh cache, steps the last token, and records the cache
// contents and that step's logits (checkpoint 3). Both runs use caches of
// one pool made with spec.kv: with Float16 the cache holds float16 values,
// and checkpoint 3 reports them widened.
func capture(ctx context.Context, m *model.Model, tokens []int, spec captureSpec) (*captured, error) {
	pool, err := m.NewKVPool(spec.kv)
	if err != nil {
		return nil, err
	}
	c := &captured{tensors: map[tensorKey]model.Captured{}, keep: spec.names}
	probe := model.ProbeFunc(c.put)
	if spec.inspect != nil {
		probe = func(t model.Captured) {
			spec.inspect(t)
			c.put(t)
		}
	}
	if _, err := m.Forward(ctx, pool.NewCache(), tokens, model.ForwardOptions{Probe: probe, ForceKV: spec.force, LogitRows: spec.logitRows,
		ProbeValues: probeValues}); err != nil {
		return nil, fmt.Errorf("forward: %w", err)
	}
	if !spec.incremental || len(tokens) < 2 {
		return c, nil
	}
	cache := pool.NewCache()
	t := len(tokens)
	if _, err := m.Forward(ctx, cache, tokens[:t-1], model.ForwardOptions{ForceKV: spec.force}); err != nil {
		return nil, fmt.Errorf("prefill of %d tokens: %w", t-1, err)
	}
	step, err := m.Forward(ctx, cache, tokens[t-1:], model.ForwardOptions{ForceKV: spec.force})
	if err != nil {
		return nil, fmt.Errorf("incremental step at position %d: %w", t-1, err)
	}
	cfg := m.Config
	h, d := cfg.KVHeads(), cfg.HeadDim()
	c.tensors[tensorKey{tensors.StepLogits, model.NoLayer}] = model.Captured{
		Checkpoint: 3, Layer: model.NoLayer, Name: tensors.StepLogits, Shape: []int{cfg.VocabSize}, Data: step,
	}
	for l := 0; l < cfg.NLayer; l++ {
		k, v := cache.Snapshot(l)
		shape := []int{h, cache.Len(), d}
		c.tensors[tensorKey{tensors.KCache, l}] = model.Captured{Checkpoint: 3, Layer: l, Name: tensors.KCache, Shape: shape, Data: k}
		c.tensors[tensorKey{tensors.VCache, l}] = model.Captured{Checkpoint: 3, Layer: l, Name: tensors.VCache, Shape: slices.Clone(shape), Data: v}
	}
	return c, nil
}
