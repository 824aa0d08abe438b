package loader

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/safetensors"
	"github.com/llorch/llorch-check/weights"
)

// convertPlan checks an HF checkpoint as the loader does and lists the
// GGUF keys and tensors of its model (model.GGUFKeys, ConvertLayout),
// each tensor from its source tensors, and the dtypes the file stores.
func convertPlan(cfg model.Config, f *safetensors.File, typ gguf.GGMLType, ftype uint32) ([]gguf.KV, []streamTensor, string, error) {
	pc, err := placingOf(cfg)
	if err != nil {
		return nil, nil, "", err
	}
	src, dtypes, keys, err := pc.sources(cfg, f, ftype)
	if err != nil {
		return nil, nil, "", err
	}
	layout, err := model.ConvertLayout(cfg)
	if err != nil {
		return nil, nil, "", err
	}
	plan := make([]streamTensor, len(layout))
	for i, t := range layout {
		plan[i] = streamTensor{GGUFTensor: t, typ: tensorType(t, typ)}
		for _, name := range t.Source {
			plan[i].srcs = append(plan[i].srcs, src[name])
		}
	}
	kv, err := encodeKeys(keys)
	if err != nil {
		return nil, nil, "", err
	}
	return kv, plan, strings.Join(dtypes, "+"), nil
}

// llamaSources checks a Llama-family checkpoint as loadLlamaFrom does
// (and its config as the GGUF layout can say it: model.GGUFKeys) and gives
// each parameter's source tensor, by its HF name, the dtypes and the keys.
func llamaSources(cfg model.Config, f *safetensors.File, ftype uint32) (map[string]*safetensors.Tensor, []string, []model.KV, error) {
	if cfg.NLayer > len(f.Tensors) {
		return nil, nil, nil, fmt.Errorf("config num_hidden_layers %d is more layers than the file's %d tensors can hold", cfg.NLayer, len(f.Tensors))
	}
	keys, err := model.GGUFKeys(cfg, ftype)
	if err != nil {
		return nil, nil, nil, err
	}
	byName, err := llamaTensors(cfg, f)
	if err != nil {
		return nil, nil, nil, err
	}
	src := map[string]*safetensors.Tensor{}
	dtypes := map[string]bool{}
	take := func(name string, shape []int) error {
		t, err := takeLlamaTensor(byName, name, shape)
		if err != nil {
			return err
		}
		src[name], dtypes[t.DType] = t, true
		return nil
	}
	for _, p := range model.Params(cfg) {
		if err := p.CheckRopeHeads(); err != nil {
			return nil, nil, nil, err
		}
		switch {
		case p.Router(): // with the layer's experts, stacked
			for _, s := range cfg.ExpertStacks(p.Layer()) {
				for _, name := range s.HF {
					if err := take(name, s.Shape); err != nil {
						return nil, nil, nil, err
					}
				}
			}
			continue
		case p.Expert():
			continue
		}
		if err := take(p.HF(), p.Shape()); err != nil {
			return nil, nil, nil, err
		}
	}
	if err := checkLlamaRest(cfg, f, byName, weights.Release); err != nil {
		return nil, nil, nil, err
	}
	return src, slices.Sorted(maps.Keys(dtypes)), keys, nil
}

// gpt2Sources checks a GPT-2 checkpoint as loadWeightsFrom does and
// gives each parameter's source tensor, by its HF name, the dtypes and
// the keys (model.GGUFKeys).
func gpt2Sources(cfg model.Config, f *safetensors.File, ftype uint32) (map[string]*safetensors.Tensor, []string, []model.KV, error) {
	src, dtypes, err := gpt2Tensors(cfg, f)
	if err != nil {
		return nil, nil, nil, err
	}
	keys, err := model.GGUFKeys(cfg, ftype)
	if err != nil {
		return nil, nil, nil, err
	}
	return src, dtypes, keys, nil
}

// gpt2Tensors are gpt2Sources' tensors and dtypes.
func gpt2Tensors(cfg model.Config, f *safetensors.File) (map[string]*safetensors.Tensor, []string, error) {
	if cfg.NLayer > len(f.Tensors) {
		return nil, nil, fmt.Errorf("config n_layer %d is more blocks than the file's %d tensors can hold", cfg.NLayer, len(f.Tensors))
	}
	params := model.Params(cfg)
	want := map[string]model.Param{}
	for _, p := range params {
		want[p.HF()] = p
	}
	buffers := map[string]bool{}
	for i := range cfg.NLayer {
		buffers[fmt.Sprintf("h.%d.attn.bias", i)] = true
		buffers[fmt.Sprintf("h.%d.attn.masked_bias", i)] = true
	}
	found := map[string]string{}
	src := map[string]*safetensors.Tensor{}
	dtypes := map[string]bool{}
	var lmHead *safetensors.Tensor
	for i := range f.Tensors {
		t := &f.Tensors[i]
		name := strings.TrimPrefix(t.Name, "transformer.")
		if prev, dup := found[name]; dup {
			return nil, nil, fmt.Errorf("tensors %q and %q are the same parameter", prev, t.Name)
		}
		found[name] = t.Name
		if buffers[name] {
			continue
		}
		if name == "lm_head.weight" {
			lmHead = t
			continue
		}
		e, ok := want[name]
		if !ok {
			return nil, nil, fmt.Errorf("unexpected tensor %q", t.Name)
		}
		if !slices.Equal(t.Shape, e.Shape()) {
			return nil, nil, fmt.Errorf("tensor %q: shape %v, expected %v", t.Name, t.Shape, e.Shape())
		}
		src[name] = t
		dtypes[t.DType] = true
	}
	var missing []string
	for _, p := range params {
		if src[p.HF()] == nil {
			missing = append(missing, p.HF())
		}
	}
	if len(missing) > 0 {
		return nil, nil, fmt.Errorf("missing tensor %q (%d missing in all)", missing[0], len(missing))
	}
	if lmHead != nil {
		if err := checkTied(f, *lmHead, *src["wte.weight"], weights.Release); err != nil {
			return nil, nil, err
		}
	}
	return src, slices.Sorted(maps.Keys(dtypes)), nil
}
