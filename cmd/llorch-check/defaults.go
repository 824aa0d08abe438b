package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	llorchcheck "github.com/llorch/llorch-check"
	"github.com/llorch/llorch-check/kvcache"
	"github.com/llorch/llorch-check/loader"
	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/references"
	"github.com/spf13/pflag"
)

// The project's default tiny model and its committed reference set,
// relative to the repository root; outside a clone, the copies built into
// the binary.
const (
	defaultModel      = llorchcheck.BuiltinModel
	defaultReferences = llorchcheck.BuiltinReferences
)

// modelFlags pick a model and how it is held in memory, the same way for
// every command that loads one.
type modelFlags struct {
	path         string
	weightDType  string
	weightsCache string
	layers       int
}

func (f *modelFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&f.path, "model", "", "HF-layout model directory or .gguf file (default "+defaultModel+", or outside a clone the copy built into the binary)")
	fl.StringVar(&f.weightDType, "weight-dtype", "auto", "hold the weight matrices as f32, or f16 (half the memory and decode traffic, float32 arithmetic); auto: as the file stores them where it stores every one as float16, or (HF) as bfloat16, losing nothing, else f32 (quantised files stay quantised)")
	fl.IntVar(&f.layers, "layers", 0, "N: load and run only the first N blocks, then the final norm and head (an HF checkpoint's; as vLLM's num_hidden_layers override), against a reference set made with the same --layers; default: the reference set's, or all")
	fl.StringVar(&f.weightsCache, "weights-cache", "", "DIR: keep the model's weights (a GGUF file's or an HF directory's) as the kernels hold them in DIR (one file a model, the size of its weights in memory) and map them on the next load instead of re-laying every matrix; rewritten when the file's content (sha256), --weight-dtype or the llorch-check build changes, or when the cache file's checksum fails")
}

// options are the load options --weight-dtype and --weights-cache ask for.
func (f modelFlags) options() (loader.Options, error) {
	opt := loader.Options{WeightsCache: f.weightsCache, Layers: f.layers}
	if f.layers < 0 {
		return loader.Options{}, fmt.Errorf("--layers %d: want a positive number of blocks", f.layers)
	}
	switch f.weightDType {
	case "auto":
		opt.AsStored = true
	case "f32":
	case "f16":
		opt.Float16 = true
	default:
		return loader.Options{}, fmt.Errorf("--weight-dtype %q: want auto, f32 or f16", f.weightDType)
	}
	return opt, nil
}

// load loads the model (loader.Load tells HF directories and GGUF files
// apart by the GGUF magic), stopping if ctx ends.
func (f modelFlags) load(ctx context.Context) (*model.Model, error) { return f.loadWith(ctx, false) }

// loadWith is load; cacheLater leaves a weights cache to write to
// loader.WriteWeightsCache.
func (f modelFlags) loadWith(ctx context.Context, cacheLater bool) (*model.Model, error) {
	opt, err := f.options()
	if err != nil {
		return nil, err
	}
	opt.WriteCacheLater = cacheLater
	path, err := modelPath(f.path)
	if err != nil {
		return nil, err
	}
	return loader.LoadContext(ctx, path, opt)
}

// resolveDefault finds a default path from the working directory or any
// parent, so the defaults work from anywhere inside a clone; outside one,
// the default model and reference set are the binary's own (builtin).
func resolveDefault(rel string) (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, rel)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			if isBuiltin(rel) {
				return builtin.path(rel)
			}
			return "", fmt.Errorf("default %s not found in this directory or its parents: run inside a llorch-check clone or pass the path", rel)
		}
		dir = parent
	}
}

// pathOrDefault returns flag if set, else the resolved default.
func pathOrDefault(flag, rel string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	return resolveDefault(rel)
}

func openReferences(flag string) (*references.Set, error) {
	dir, err := pathOrDefault(flag, defaultReferences)
	if err != nil {
		return nil, err
	}
	return references.Open(dir)
}

// openModelReferences is openReferences for a model given by --model:
// without --references, the set named after the model in a references
// directory beside it (testdata/tiny-llama's is
// testdata/references/tiny-llama), as the repository keeps each default
// model's set; the default set if there is none. With kv's float16 cache
// it takes that set's f16-kv twin (NAME-f16kv) where there is one.
func openModelReferences(flag, modelPath string, kv kvcache.Options) (*references.Set, error) {
	twin := func(dir string) string { return dir }
	if kv.Float16 {
		twin = references.F16KVTwin
	}
	if flag == "" && modelPath != "" {
		if beside, ok := references.BesideModel(modelPath); ok {
			return references.Open(twin(beside))
		}
	}
	if flag == "" {
		dir, err := resolveDefault(defaultReferences)
		if err != nil {
			return nil, err
		}
		return references.Open(twin(dir))
	}
	return references.Open(flag)
}
