package loader

import (
	"context"
	"fmt"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/safetensors"
)

// placing is one of the loader's ways of placing a family's tensors: its
// HF loader, its GGUF loader, and its check of an HF checkpoint for
// convert (each tensor's source by HF name, the dtypes, the GGUF keys).
type placing struct {
	hf      func(ctx context.Context, cfg model.Config, f *safetensors.File, release func([]byte), opt Options) (*model.Model, error)
	gguf    func(ctx context.Context, f *gguf.File, cfg model.Config, release func([]byte), opt Options) (*model.Model, error)
	sources func(cfg model.Config, f *safetensors.File, ftype uint32) (map[string]*safetensors.Tensor, []string, []model.KV, error)
}

// placings are the ways, by the model.Placement a family's registration
// names: GPT-2's whole Conv1D matrices (hf_gpt2.go, gguf_load.go), the
// Llama family's fused q|k|v and gate|up and experts (hf_llama.go,
// gguf_llama.go, gguf_moe.go).
var placings = map[model.Placement]placing{
	model.PlaceWhole: {hf: loadWeightsFrom, gguf: loadGPT2GGUF, sources: gpt2Sources},
	model.PlaceFused: {hf: loadLlamaFrom, gguf: loadLlamaGGUF, sources: llamaSources},
}

// placingOf is the way cfg's tensors are placed.
func placingOf(cfg model.Config) (placing, error) {
	p, ok := placings[cfg.Placement()]
	if !ok {
		return placing{}, fmt.Errorf("%s: no loader places its tensors (model.Placement %d)", cfg.ModelType, cfg.Placement())
	}
	return p, nil
}
