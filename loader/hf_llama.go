package loader

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/safetensors"
	"github.com/llorch/llorch-check/weights"
)

// loadLlamaFrom reads a Llama-family checkpoint's tensors (names with or
// without "model.") through the family's parameter table. Linear weights
// arrive [out,in]; the Placer stacks q, k and v into one matrix and gate
// and up into another, then holds them transposed, [in,out], as the
// kernels read GPT-2's Conv1D weights. release is as loadWeightsFrom's.
func loadLlamaFrom(ctx context.Context, cfg model.Config, f *safetensors.File, release func([]byte), opt Options) (*model.Model, error) {
	byName, err := llamaTensors(cfg, f)
	if err != nil {
		return nil, err
	}
	pl := model.NewPlacer(cfg, opt.Float16, true, release)
	params := pl.Params()
	if opt.AsStored {
		pl.HoldAsStored(llamaMatricesDType(params, byName))
	}
	ld := hfLlama{pl: pl, m: pl.Model(), f: f, release: release, dtypes: map[string]bool{}}
	for i, p := range params {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("loading stopped: %w", err)
		}
		t, err := takeLlamaTensor(byName, p.HF(), p.Shape())
		if err != nil {
			return nil, err
		}
		if next := i + 1; release != nil && next < len(params) {
			if u, ok := byName[params[next].HF()]; ok {
				weights.Prefetch(f.Raw(*u)) // read while this one is placed
			}
		}
		if err := ld.put(p, t); err != nil {
			return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
		}
	}
	if err := pl.Finish(); err != nil {
		return nil, err
	}
	if err := checkLlamaRest(cfg, f, byName, release); err != nil {
		return nil, err
	}
	pl.Model().WeightsDType = strings.Join(slices.Sorted(maps.Keys(ld.dtypes)), "+")
	return pl.Done()
}

// llamaTensors are a Llama-family checkpoint's tensors by name without
// "model.", but the rotary buffers older exports save; an error for two
// of one name, or for more layers than the file can hold.
func llamaTensors(cfg model.Config, f *safetensors.File) (map[string]*safetensors.Tensor, error) {
	if cfg.NLayer > len(f.Tensors) {
		return nil, fmt.Errorf("config num_hidden_layers %d is more layers than the file's %d tensors can hold", cfg.NLayer, len(f.Tensors))
	}
	byName := map[string]*safetensors.Tensor{}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		name := strings.TrimPrefix(t.Name, "model.")
		if strings.HasSuffix(name, "rotary_emb.inv_freq") {
			continue // a buffer older exports save; recomputed from the config
		}
		if prev, dup := byName[name]; dup {
			return nil, fmt.Errorf("tensors %q and %q are the same parameter", prev.Name, t.Name)
		}
		byName[name] = t
	}
	return byName, nil
}

// takeLlamaTensor takes the tensor of a parameter out of byName, checking
// its shape.
func takeLlamaTensor(byName map[string]*safetensors.Tensor, name string, shape []int) (*safetensors.Tensor, error) {
	t, ok := byName[name]
	if !ok {
		return nil, fmt.Errorf("missing tensor %q", name)
	}
	if !slices.Equal(t.Shape, shape) {
		return nil, fmt.Errorf("tensor %q: shape %v, config.json implies %v", t.Name, t.Shape, shape)
	}
	delete(byName, name)
	return t, nil
}

// checkLlamaRest checks the tensors left once every parameter is taken:
// a tied checkpoint's lm_head, which must be the embedding, and nothing
// else.
func checkLlamaRest(cfg model.Config, f *safetensors.File, byName map[string]*safetensors.Tensor, release func([]byte)) error {
	if t, ok := byName["lm_head.weight"]; ok && cfg.Tied {
		// A tied checkpoint that also stores the head: it must be the embedding.
		emb := f.Tensors[slices.IndexFunc(f.Tensors, func(u safetensors.Tensor) bool {
			return strings.TrimPrefix(u.Name, "model.") == "embed_tokens.weight"
		})]
		if err := checkTied(f, *t, emb, release); err != nil {
			return err
		}
		delete(byName, "lm_head.weight")
	}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		return fmt.Errorf("unexpected tensor %q (not a %s parameter of this config)", byName[name].Name, cfg.ModelType)
	}
	return nil
}

// llamaMatricesDType is the dtype the file stores every matrix of the
// table in, "" if they differ.
func llamaMatricesDType(params []model.Param, byName map[string]*safetensors.Tensor) string {
	dtype := ""
	for _, p := range params {
		t, ok := byName[p.HF()]
		if !ok || len(p.Shape()) != 2 {
			continue
		}
		if dtype != "" && t.DType != dtype {
			return ""
		}
		dtype = t.DType
	}
	return dtype
}

// hfLlama decodes an HF checkpoint's tensors for the Placer.
type hfLlama struct {
	pl      *model.Placer
	m       *model.Model
	f       *safetensors.File
	release func([]byte)
	dtypes  map[string]bool
	buf     []float32 // weights.RoundFloat16's
}

func (ld *hfLlama) put(p model.Param, t *safetensors.Tensor) error {
	ld.dtypes[t.DType] = true
	if len(p.Shape()) == 1 {
		return ld.pl.PutVector(p, weights.Float32s(ld.f, *t, ld.release))
	}
	if ld.pl.HeldAsStored(t.DType) && p.BlockMatrix() {
		// Its rows are read from the file's pages as its slabs are made.
		raw := ld.f.Raw(*t)
		if ld.release != nil {
			weights.PopulateRead(raw) // a mapping: its pages in one call, not a fault each
		}
		view, err := weights.Float16View(raw, t.Numel())
		if err != nil {
			return err
		}
		return ld.pl.PutStored(p, view, raw)
	}
	f32, h16, err := ld.matrix(t)
	if err != nil {
		return err
	}
	return ld.pl.Place(p, f32, h16)
}

// matrix converts a tensor to float32, to float16 bits for a Float16
// model (rounding, and marking the model so, unless the file stores F16),
// or to bfloat16 bits, as stored, for a BFloat16 one.
func (ld *hfLlama) matrix(t *safetensors.Tensor) ([]float32, []uint16, error) {
	switch {
	case ld.m.BFloat16 && t.DType == "BF16":
		return nil, weights.BFloat16Bits(ld.f, *t, ld.release), nil
	case !ld.m.Float16:
		return weights.Float32s(ld.f, *t, ld.release), nil, nil
	case t.DType == "F16":
		return nil, weights.Float16Bits(ld.f, *t, ld.release), nil
	}
	h, err := weights.RoundFloat16(ld.f, *t, ld.release, &ld.buf)
	ld.pl.Rounded()
	return nil, h, err
}
