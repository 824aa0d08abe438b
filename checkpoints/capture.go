package checkpoints

import (
	"context"
	"fmt"
	"slices"

	"github.com/llorch/llorch-check/model"
)

// tensorKey identifies a captured tensor within one case.
type tensorKey struct {
	name  string
	layer int
}

// captured holds copies of what the probe saw, plus the cache run.
type captured struct {
	tensors map[tensorKey]model.Captured
}

func (c *captured) get(name string, layer int) (model.Captured, bool) {
	t, ok := c.tensors[tensorKey{name, layer}]
	return t, ok
}

func (c *captured) put(t model.Captured) {
	t.Data = slices.Clone(t.Data)
	t.Shape = slices.Clone(t.Shape)
	c.tensors[tensorKey{t.Name, t.Layer}] = t
}

// capture runs the production forward over tokens with a recording probe.
// With cacheRun it also prefills T−1 tokens into a fresh cache, steps the
// last token, and records the cache contents and that step's logits
// (checkpoint 3).
func capture(ctx context.Context, m *model.Model, tokens []int, cacheRun bool) (*captured, error) {
	c := &captured{tensors: map[tensorKey]model.Captured{}}
	probe := model.ProbeFunc(c.put)
	if _, err := m.Forward(ctx, m.NewCache(), tokens, model.ForwardOptions{Probe: probe}); err != nil {
		return nil, fmt.Errorf("forward: %w", err)
	}
	if !cacheRun || len(tokens) < 2 {
		return c, nil
	}
	cache := m.NewCache()
	t := len(tokens)
	if _, err := m.Forward(ctx, cache, tokens[:t-1], model.ForwardOptions{}); err != nil {
		return nil, fmt.Errorf("prefill of %d tokens: %w", t-1, err)
	}
	step, err := m.Forward(ctx, cache, tokens[t-1:], model.ForwardOptions{})
	if err != nil {
		return nil, fmt.Errorf("incremental step at position %d: %w", t-1, err)
	}
	cfg := m.Config
	h, d := cfg.NHead, cfg.HeadDim()
	c.tensors[tensorKey{"step_logits", model.NoLayer}] = model.Captured{
		Checkpoint: 3, Layer: model.NoLayer, Name: "step_logits", Shape: []int{cfg.VocabSize}, Data: step,
	}
	for l := 0; l < cfg.NLayer; l++ {
		k, v := cache.Snapshot(l)
		shape := []int{h, cache.Len(), d}
		c.tensors[tensorKey{"k_cache", l}] = model.Captured{Checkpoint: 3, Layer: l, Name: "k_cache", Shape: shape, Data: k}
		c.tensors[tensorKey{"v_cache", l}] = model.Captured{Checkpoint: 3, Layer: l, Name: "v_cache", Shape: slices.Clone(shape), Data: v}
	}
	return c, nil
}
