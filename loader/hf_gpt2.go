package loader

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/llorch/llorch-check/kernels"
	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/safetensors"
	"github.com/llorch/llorch-check/weights"
)

// loadWeightsFrom converts every parameter of a GPT-2 checkpoint into
// fresh slices; nothing returned aliases the file's data, so the caller
// may unmap it. Its data may be file mappings: release, if not nil, is
// called on each converted range of data so that the mapping's pages
// leave the resident set as the copy grows (see weights.Float32s).
func loadWeightsFrom(ctx context.Context, cfg model.Config, f *safetensors.File, release func([]byte), opt Options) (*model.Model, error) {
	// Checked before anything is sized by the config: a config.json that
	// claims a million layers must not allocate a million blocks for a
	// file that holds two. A count merely too high fails below, naming the
	// first missing tensor.
	if cfg.NLayer > len(f.Tensors) {
		return nil, fmt.Errorf("config n_layer %d is more blocks than the file's %d tensors can hold", cfg.NLayer, len(f.Tensors))
	}
	pl := model.NewPlacer(cfg, opt.Float16, true, release)
	m := pl.Model()
	params := pl.Params()
	want := map[string]model.Param{}
	buffers := map[string]bool{}
	for _, p := range params {
		want[p.HF()] = p
	}
	for i := range cfg.NLayer {
		// The causal-mask buffers older exports save next to the weights.
		buffers[fmt.Sprintf("h.%d.attn.bias", i)] = true
		buffers[fmt.Sprintf("h.%d.attn.masked_bias", i)] = true
	}
	if opt.AsStored {
		pl.HoldAsStored(matricesStoredAs(f, want))
	}

	found := map[string]string{} // canonical name -> name in the file
	dtypes := map[string]bool{}
	var lmHead, wte *safetensors.Tensor
	var buf []float32 // weights.RoundFloat16's
	for i := range f.Tensors {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("loading stopped: %w", err)
		}
		t := f.Tensors[i]
		name := strings.TrimPrefix(t.Name, "transformer.")
		if prev, dup := found[name]; dup {
			return nil, fmt.Errorf("tensors %q and %q are the same parameter", prev, t.Name)
		}
		found[name] = t.Name
		if buffers[name] {
			continue
		}
		if name == "lm_head.weight" {
			lmHead = &f.Tensors[i]
			continue
		}
		e, ok := want[name]
		if !ok {
			return nil, fmt.Errorf("unexpected tensor %q", t.Name)
		}
		if !slices.Equal(t.Shape, e.Shape()) {
			return nil, fmt.Errorf("tensor %q: shape %v, expected %v", t.Name, t.Shape, e.Shape())
		}
		if name == "wte.weight" {
			wte = &f.Tensors[i]
		}
		switch {
		case e.Matrix() && m.Float16 && t.DType == "F16":
			pl.SetMatrix(e, kernels.Float16(weights.Float16Bits(f, t, release)))
		case e.Matrix() && m.BFloat16 && t.DType == "BF16":
			pl.SetMatrix(e, kernels.BFloat16(weights.BFloat16Bits(f, t, release)))
		case e.Matrix() && m.Float16:
			h, err := weights.RoundFloat16(f, t, release, &buf)
			if err != nil {
				return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
			}
			pl.SetMatrix(e, kernels.Float16(h))
			pl.Rounded()
		default:
			if err := pl.Store(e, weights.Float32s(f, t, release), t.DType); err != nil {
				return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
			}
		}
		dtypes[t.DType] = true
	}
	// Same spelling as the reference manifests: "F16", or "F16+F32" if mixed.
	m.WeightsDType = strings.Join(slices.Sorted(maps.Keys(dtypes)), "+")
	var missing []string
	for _, p := range params {
		if !pl.Placed(p) {
			missing = append(missing, p.HF())
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("missing tensor %q (%d missing in all)", missing[0], len(missing))
	}
	if lmHead != nil {
		if err := checkTied(f, *lmHead, *wte, release); err != nil {
			return nil, err
		}
	}
	return pl.Done()
}

var errUntied = errors.New("lm_head.weight differs from wte.weight; only a tied LM head is supported")

// checkTied accepts an lm_head that is an exact copy of wte, comparing
// the two tensors value by value in the file, so no copy is materialised
// and wte's precision in memory does not matter.
func checkTied(f *safetensors.File, t, wte safetensors.Tensor, release func([]byte)) error {
	if !slices.Equal(t.Shape, wte.Shape) {
		return fmt.Errorf("tensor %q: shape %v, expected %v (tied to wte): %w", t.Name, t.Shape, wte.Shape, errUntied)
	}
	if i, v, w := weights.FirstDifference(f, t, wte, release); i >= 0 {
		return fmt.Errorf("tensor %q: element %d is %g, wte has %g: %w", t.Name, i, v, w, errUntied)
	}
	return nil
}

// matricesStoredAs is the dtype an HF file stores every tensor the loader
// holds as a matrix in (want's, and an lm_head), "" if they differ.
func matricesStoredAs(f *safetensors.File, want map[string]model.Param) string {
	dtype := ""
	for _, t := range f.Tensors {
		name := strings.TrimPrefix(t.Name, "transformer.")
		if e, ok := want[name]; (!ok || !e.Matrix()) && name != "lm_head.weight" {
			continue
		}
		if dtype != "" && t.DType != dtype {
			return ""
		}
		dtype = t.DType
	}
	return dtype
}
